#!/usr/bin/env bash
# Figure 16 of the SwitchGNN paper (ATC '25): figure 15's sweep on the paper's 8 x 8
# leaf-spine (8 leaves, 8 spines, 100 Gbit/s everywhere; the workers spread evenly over the
# leaves, at most one per host). Every leaf and spine is a software switch and the workers are
# the daemons' engines (the real code); SwitchGNN and switchgnn_auto aggregate in two levels
# (leaf, then spine: sgnn_switch::fabric). The strawman is simulated on a star only, so it is
# not in this figure. Every option of
# fig15.sh applies (SCALE, RECIRC, WORKERS, STRATEGIES, LEAVES, SPINES, COMPUTE_MS).
#
#   tools/sim/figures/fig16.sh [OUT]       (default OUT: eval/fig16)
set -euo pipefail
export TOPOLOGY=leaf-spine FIG=16
export STRATEGIES=${STRATEGIES:-host_based,g3,switchgnn,switchgnn_no_cc,switchgnn_auto}
exec "$(dirname "$0")/fig15.sh" "${1:-eval/fig16}"
