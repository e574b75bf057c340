# The classic tc-tbf example: `qoslab import tc examples/import/tbf.sh`
tc qdisc add dev eth0 root tbf rate 180kbit latency 20ms buffer 1540
