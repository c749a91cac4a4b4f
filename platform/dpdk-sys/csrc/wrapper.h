/* What bindgen reads: the DPDK API the SwitchGNN crates use, plus the shim. */
#include <rte_bus_vdev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "shim.h"
