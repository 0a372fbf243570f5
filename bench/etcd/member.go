package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// runMember starts one etcd member with embed.StartEtcd, prints "ready"
// once it serves clients, and runs until SIGINT/SIGTERM.
func runMember(args []string) error {
	fs := flag.NewFlagSet("member", flag.ExitOnError)
	name := fs.String("name", "", "member name (must appear in -cluster)")
	dir := fs.String("dir", "", "data directory")
	clientPort := fs.Int("client-port", 2379, "client port on 127.0.0.1")
	peerPort := fs.Int("peer-port", 2380, "peer port on 127.0.0.1")
	cluster := fs.String("cluster", "", `initial cluster, "n1=http://127.0.0.1:Q1,n2=...,n3=..."`)
	token := fs.String("token", "strata-bench", "initial cluster token")
	logLevel := fs.String("log-level", "error", "etcd log level (debug|info|warn|error)")
	startTimeout := fs.Duration("start-timeout", 60*time.Second, "how long to wait for the member to serve")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *dir == "" || *cluster == "" {
		return errors.New("member: -name, -dir and -cluster are required")
	}
	if !strings.Contains(","+*cluster, ","+*name+"=") {
		return fmt.Errorf("member: -cluster does not name %q", *name)
	}

	curl, err := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", *clientPort))
	if err != nil {
		return err
	}
	purl, err := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", *peerPort))
	if err != nil {
		return err
	}

	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dir
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = *cluster
	cfg.InitialClusterToken = *token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.LogLevel = *logLevel
	cfg.LogOutputs = []string{"stderr"}
	// fsync stays ON (UnsafeNoFsync=false is the default): the comparison is
	// against a durable store.
	cfg.UnsafeNoFsync = false

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	defer e.Close()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)

	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return fmt.Errorf("etcd failed before ready: %w", err)
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcdpeer: %v before ready, stopping\n", s)
		return nil
	case <-time.After(*startTimeout):
		e.Server.Stop()
		return fmt.Errorf("member %s not ready after %v", *name, *startTimeout)
	}
	fmt.Println("ready")

	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcdpeer: %v, stopping member %s\n", s, *name)
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcd: %w", err)
	case <-e.Server.StopNotify():
		return errors.New("etcd server stopped")
	}
}
