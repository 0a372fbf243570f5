package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	worbench "strata/bench/wor"
	"strata/internal/freeport"
)

// findBenchDir locates bench/NAME (a separate Go module) from the working
// directory or the executable's directory upwards.
func findBenchDir(name string) (string, error) {
	self, _ := os.Executable()
	wd, _ := os.Getwd()
	for _, d := range []string{wd, filepath.Dir(self)} {
		for d != "" {
			p := filepath.Join(d, "bench", name)
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return p, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", fmt.Errorf("cannot find bench/%s (run from the Strata source tree)", name)
}

// etcdCluster is three etcd members (the bench/etcd peer), one process each.
type etcdCluster struct {
	bin       string
	procs     []*exec.Cmd
	endpoints string
}

func startEtcd(ctx context.Context, progress io.Writer, dataDir string) (*etcdCluster, error) {
	src, err := findBenchDir("etcd")
	if err != nil {
		return nil, err
	}
	binDir, err := os.MkdirTemp("", "strata-etcd-")
	if err != nil {
		return nil, err
	}
	c := &etcdCluster{bin: filepath.Join(binDir, "etcdpeer")}
	fmt.Fprintf(progress, "building the etcd peer from %s (first build takes a few minutes)\n", src)
	b := exec.CommandContext(ctx, "go", "build", "-o", c.bin, ".")
	b.Dir = src
	var stderr bytes.Buffer
	b.Stderr = &stderr
	if err := b.Run(); err != nil {
		return nil, fmt.Errorf("build etcd peer: %w\n%s", err, stderr.String())
	}
	ports, err := freeport.TCP(6)
	if err != nil {
		return nil, err
	}
	var cluster, eps []string
	for i := 0; i < 3; i++ {
		cluster = append(cluster, fmt.Sprintf("n%d=http://127.0.0.1:%d", i+1, ports[3+i]))
		eps = append(eps, fmt.Sprintf("http://127.0.0.1:%d", ports[i]))
	}
	c.endpoints = strings.Join(eps, ",")
	os.RemoveAll(dataDir)
	ready := make(chan error, 3)
	for i := 0; i < 3; i++ {
		p := exec.CommandContext(ctx, c.bin, "member", "-name", fmt.Sprintf("n%d", i+1),
			"-dir", filepath.Join(dataDir, fmt.Sprintf("n%d", i+1)), "-client-port", fmt.Sprint(ports[i]),
			"-peer-port", fmt.Sprint(ports[3+i]), "-cluster", strings.Join(cluster, ","))
		out, err := p.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := p.Start(); err != nil {
			c.stop()
			return nil, err
		}
		c.procs = append(c.procs, p)
		go func() {
			line, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && strings.TrimSpace(line) != "ready" {
				err = fmt.Errorf("etcd member printed %q", line)
			}
			ready <- err
			io.Copy(io.Discard, out)
		}()
	}
	for i := 0; i < 3; i++ {
		select {
		case err := <-ready:
			if err != nil {
				c.stop()
				return nil, err
			}
		case <-time.After(90 * time.Second):
			c.stop()
			return nil, fmt.Errorf("etcd members not ready after 90s")
		}
	}
	return c, nil
}

func (c *etcdCluster) stop() {
	for _, p := range c.procs {
		p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(filepath.Dir(c.bin))
}

// run measures one etcd operation ("put": create-if-absent transaction,
// "get": linearizable read).
func (c *etcdCluster) run(ctx context.Context, op string, clients, size int, d time.Duration, prefix string) (worbench.Result, error) {
	cmd := exec.CommandContext(ctx, c.bin, "bench", "-endpoints", c.endpoints, "-op", op, "-clients", fmt.Sprint(clients),
		"-duration", d.String(), "-size", fmt.Sprint(size), "-prefix", prefix)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return worbench.Result{}, fmt.Errorf("etcd bench %s: %w\n%s", op, err, stderr.String())
	}
	var r worbench.Result
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
		return r, fmt.Errorf("etcd bench output %q: %w", out.String(), err)
	}
	r.Mode = "persistent"
	return r, nil
}
