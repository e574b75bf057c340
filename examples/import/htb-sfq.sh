# Linux HTB with two classes (SFQ and bfifo leaves) and a u32 filter:
# `qoslab import tc examples/import/htb-sfq.sh`
tc qdisc replace dev eth1 root handle 1:0 htb default 20
tc class add dev eth1 parent 1: classid 1:1 htb rate 10mbit
tc class add dev eth1 parent 1:1 classid 1:10 htb rate 4mbit ceil 10mbit burst 1600 cburst 1600
tc class add dev eth1 parent 1:1 classid 1:20 htb rate 6mbit ceil 10mbit
tc qdisc add dev eth1 parent 1:10 handle 10: bfifo limit 30kb
tc qdisc add dev eth1 parent 1:20 handle 20: sfq perturb 10
tc filter add dev eth1 parent 1: protocol ip prio 1 u32 \
    match ip dport 5001 0xffff flowid 1:10
