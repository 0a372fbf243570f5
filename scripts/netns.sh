#!/bin/sh
# Hosts on one machine for trying Strata's servers by hand, as
# cmd/strata's TestKVNetns does: network namespaces joined by veth pairs
# to a bridge in this namespace, each with an address of its own.
#
#   scripts/netns.sh up [N] [SUBNET]   N hosts (default 3) on SUBNET.0/24
#                                      (default 10.77.200): namespaces
#                                      strata-host-1..N at SUBNET.1..N,
#                                      the bridge strata-br at SUBNET.254
#   scripts/netns.sh cut I | join I    take host I off the bridge / back
#   scripts/netns.sh down              remove them (and any leftovers of
#                                      TestKVNetns: strata-kv-* and skv*)
#
# Then, for example:
#   ip netns exec strata-host-1 strata wor serve --listen udp:10.77.200.1:7101 --dir /tmp/h1
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2.
set -eu

cmd=${1:-}
case "$cmd" in
up)
	n=${2:-3}
	subnet=${3:-10.77.200}
	ip link add strata-br type bridge
	ip addr add "$subnet.254/24" dev strata-br
	ip link set strata-br up
	i=1
	while [ "$i" -le "$n" ]; do
		ip netns add "strata-host-$i"
		ip link add "strata-h$i" type veth peer name "strata-n$i" netns "strata-host-$i"
		ip link set "strata-h$i" master strata-br
		ip link set "strata-h$i" up
		ip -n "strata-host-$i" addr add "$subnet.$i/24" dev "strata-n$i"
		ip -n "strata-host-$i" link set "strata-n$i" up
		ip -n "strata-host-$i" link set lo up
		echo "strata-host-$i: $subnet.$i"
		i=$((i + 1))
	done
	;;
cut)
	ip link set "strata-h${2:?host number}" down
	;;
join)
	ip link set "strata-h${2:?host number}" up
	;;
down)
	for ns in $(ip netns list | awk '{print $1}' | grep -E '^strata-(host|kv)-' || true); do
		ip netns pids "$ns" | xargs -r kill -9
		ip netns del "$ns"
	done
	for l in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^(strata-br|strata-h[0-9]+|skv[0-9a-f]{4}(br|h[0-9]+))$' || true); do
		ip link del "$l" 2>/dev/null || true
	done
	;;
*)
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
