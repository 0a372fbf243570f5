// Command etcdpeer runs an etcd member in-process and drives a small
// benchmark client against an etcd cluster. It is the etcd peer of
// `strata bench wor` (strata/bench/wor starts it): a durable consensus
// store with etcd's own defaults.
//
//	etcdpeer member -name n1 -dir /tmp/n1 -client-port 23791 -peer-port 23801 \
//	    -cluster "n1=http://127.0.0.1:23801,n2=http://127.0.0.1:23802,n3=http://127.0.0.1:23803"
//	etcdpeer bench -endpoints http://127.0.0.1:23791,... -op create -clients 16 \
//	    -warmup 500ms -duration 3s -size 8 -prefix run1
package main

import (
	"fmt"
	"os"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: etcdpeer member|bench [flags]  (etcdpeer member -h, etcdpeer bench -h)")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "member":
		err = runMember(os.Args[2:])
	case "bench":
		err = runBench(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdpeer:", err)
		os.Exit(1)
	}
}
