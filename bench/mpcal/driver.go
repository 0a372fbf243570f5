package mpcal

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"strata/bench/kit"
)

// driverSource is the Java driver that times pcal.trans in one JVM.
//
//go:embed PcalBench.java
var driverSource []byte

// ErrNoJavac is returned when the JDK's compiler is missing.
var ErrNoJavac = errors.New("javac is missing: the warm pcal.trans driver (bench/mpcal/PcalBench.java) is compiled at run time; install a JDK (Debian: apt-get install default-jdk-headless)")

// compileDriver compiles PcalBench.java against jar into a folder of the
// user's cache named by a hash of the source, the jar and javac's version,
// unless it is there already, and returns that folder.
func compileDriver(ctx context.Context, jar string, progress io.Writer) (string, error) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", ErrNoJavac
	}
	ver, err := exec.CommandContext(ctx, javac, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("javac -version: %w\n%s", err, ver)
	}
	st, err := os.Stat(jar)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d %d\n", ver, jar, st.Size(), st.ModTime().UnixNano())
	h.Write(driverSource)
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "strata", "bench", "mpcal-driver-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(out, "PcalBench.class")); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".javac-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "PcalBench.java")
	if err := os.WriteFile(src, driverSource, 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "compiling the pcal.trans driver into %s\n", out)
	if b, err := exec.CommandContext(ctx, javac, "-d", tmp, "-cp", jar, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac PcalBench.java against %s: %w\n%s", jar, err, b)
	}
	os.RemoveAll(out)
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}

// driver is the running Java driver.
type driver struct {
	p     *kit.Proc
	out   *bufio.Reader
	ready driverReady
}

// driverReady is the driver's ready line.
type driverReady struct {
	Java string `json:"java"`
	VM   string `json:"vm"`
	Pcal string `json:"pcal"`
}

// loaded is the driver's answer to load: the translation's hash and sizes.
type loaded struct {
	SHA256   string `json:"sha256"`
	InLines  int    `json:"in_lines"`
	OutLines int    `json:"out_lines"`
}

// startDriver starts the driver in a JVM with its default settings.
func startDriver(ctx context.Context, java, jar, classes string) (*driver, error) {
	pr, pw := io.Pipe()
	p, err := kit.Start(ctx, kit.Cmd{
		Name:   "pcal.trans driver (java PcalBench)",
		Argv:   []string{java, "-cp", jar + string(os.PathListSeparator) + classes, "PcalBench"},
		Stdin:  true,
		Ready:  func(line string) bool { return strings.HasPrefix(line, `{"ready":true`) },
		Stdout: pw,
		Grace:  5 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	// Every line the driver printed was read before it exits (the pipe
	// has no buffer), so closing here only ends a reader left waiting.
	go func() {
		<-p.Exited()
		pw.Close()
	}()
	d := &driver{p: p, out: bufio.NewReader(pr)}
	if err := json.Unmarshal([]byte(p.Ready), &d.ready); err != nil {
		p.Stop()
		return nil, fmt.Errorf("pcal.trans driver's ready line %q: %w", p.Ready, err)
	}
	return d, nil
}

// call sends one command and decodes its one-line answer into v.
func (d *driver) call(cmd string, v any) error {
	if _, err := io.WriteString(d.p.Stdin(), cmd+"\n"); err != nil {
		return fmt.Errorf("pcal.trans driver: %s: %w\n%s", cmd, err, d.p.Tail(20))
	}
	line, err := d.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("pcal.trans driver exited during %q (%v):\n%s", cmd, d.p.Err(), d.p.Tail(20))
	}
	var e struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		return fmt.Errorf("pcal.trans driver: %s: answer %q: %w", cmd, line, err)
	}
	if e.Error != nil {
		return fmt.Errorf("pcal.trans driver: %s", *e.Error)
	}
	return json.Unmarshal([]byte(line), v)
}

// load has the driver read and translate the PlusCal module at path.
func (d *driver) load(id, path string) (loaded, error) {
	var l loaded
	err := d.call("load "+id+" "+path, &l)
	return l, err
}

// run has the driver translate module id n times and returns each
// translation's time.
func (d *driver) run(id string, n int) ([]time.Duration, error) {
	var r struct {
		NS []int64 `json:"ns"`
	}
	if err := d.call("run "+id+" "+strconv.Itoa(n), &r); err != nil {
		return nil, err
	}
	if len(r.NS) != n {
		return nil, fmt.Errorf("pcal.trans driver: asked for %d runs, got %d times", n, len(r.NS))
	}
	ds := make([]time.Duration, n)
	for i, ns := range r.NS {
		ds[i] = time.Duration(ns)
	}
	return ds, nil
}

func (d *driver) stop() error { return d.p.Stop() }

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
