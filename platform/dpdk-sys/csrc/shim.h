/* Non-inline wrappers for the DPDK functions and macros that exist only as `static inline`
 * code in DPDK's headers (the fast path), so Rust can call them. Every function here is a
 * one-line forward; the names are the DPDK names with an `sgnn_` prefix. */
#ifndef SGNN_DPDK_SHIM_H
#define SGNN_DPDK_SHIM_H

#include <stdint.h>

struct rte_mbuf;
struct rte_mempool;

/* rte_eth_rx_burst */
uint16_t sgnn_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts,
                               uint16_t nb_pkts);
/* rte_eth_tx_burst */
uint16_t sgnn_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts,
                               uint16_t nb_pkts);
/* rte_pktmbuf_alloc: NULL when the pool is empty. */
struct rte_mbuf *sgnn_rte_pktmbuf_alloc(struct rte_mempool *mp);
/* rte_pktmbuf_alloc_bulk: 0 on success (all `count` allocated), negative otherwise (none). */
int sgnn_rte_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned count);
/* rte_pktmbuf_free (the whole chain). */
void sgnn_rte_pktmbuf_free(struct rte_mbuf *m);
/* rte_pktmbuf_mtod(m, void *): start of the data of this segment. */
void *sgnn_rte_pktmbuf_mtod(struct rte_mbuf *m);
/* rte_pktmbuf_data_len: bytes of data in this segment. */
uint16_t sgnn_rte_pktmbuf_data_len(const struct rte_mbuf *m);
/* rte_pktmbuf_pkt_len: bytes of the whole packet (all segments). */
uint32_t sgnn_rte_pktmbuf_pkt_len(const struct rte_mbuf *m);
/* m->nb_segs */
uint16_t sgnn_rte_pktmbuf_nb_segs(const struct rte_mbuf *m);
/* m->next: the next segment, or NULL. */
struct rte_mbuf *sgnn_rte_pktmbuf_next(const struct rte_mbuf *m);
/* rte_pktmbuf_append: NULL if the tailroom is too small. */
char *sgnn_rte_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
/* rte_errno (a per-lcore variable). */
int sgnn_rte_errno(void);
/* rte_lcore_id */
unsigned sgnn_rte_lcore_id(void);

#endif
