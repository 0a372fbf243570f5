package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage"
	"go.etcd.io/etcd/server/v3/storage/backend"
)

// runMember starts one etcd member with embed.StartEtcd, prints "ready "
// and the settings it runs with (JSON, read back from the running server)
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
	line, err := json.Marshal(settings(e))
	if err != nil {
		return err
	}
	fmt.Printf("ready %s\n", line)

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

// settings are the member's effective settings, read from the running
// server (so that the benchmark prints what etcd ran with, not what this
// file meant to set): zero values that etcd replaces with its defaults
// are shown as those defaults.
func settings(e *embed.Etcd) map[string]any {
	c := e.Server.Cfg
	quota := c.QuotaBackendBytes
	if quota <= 0 {
		quota = storage.DefaultQuotaBytes
	}
	interval, limit := c.BackendBatchInterval, c.BackendBatchLimit
	bc := backend.DefaultBackendConfig(nil)
	if interval == 0 {
		interval = bc.BatchInterval
	}
	if limit == 0 {
		limit = bc.BatchLimit
	}
	ec := e.Config()
	return map[string]any{
		"version":                version.Version,
		"go":                     runtime.Version(),
		"gomaxprocs":             runtime.GOMAXPROCS(0),
		"unsafe_no_fsync":        c.UnsafeNoFsync,
		"snapshot_count":         c.SnapshotCount,
		"snapshot_catchup":       c.SnapshotCatchUpEntries,
		"quota_backend_bytes":    quota,
		"heartbeat_ms":           c.TickMs,
		"election_ms":            c.TickMs * uint(c.ElectionTicks),
		"backend_batch_interval": interval.String(),
		"backend_batch_limit":    limit,
		"max_request_bytes":      c.MaxRequestBytes,
		"auto_compaction":        fmt.Sprintf("%q %q", ec.AutoCompactionMode, ec.AutoCompactionRetention),
		"metrics":                ec.Metrics,
	}
}
