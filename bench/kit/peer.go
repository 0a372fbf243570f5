package kit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Module returns the folder of the Go module bench/PATH (a peer's own
// module, e.g. "etcd" or "journal/gojournal"), found from the working
// directory or the executable's directory upwards: peers are built from
// the Strata source tree, never vendored.
func Module(path string) (string, error) {
	self, _ := os.Executable()
	wd, _ := os.Getwd()
	for _, d := range []string{wd, filepath.Dir(self)} {
		for d != "" {
			p := filepath.Join(d, "bench", filepath.FromSlash(path))
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
	return "", fmt.Errorf("cannot find the module bench/%s (run from the Strata source tree)", path)
}

var buildMu sync.Mutex

// BuildGo builds the packages pkgs (import paths or ./dirs) of the module in
// dir into a folder of the user's cache named by a hash of the module's
// files and the Go version, unless they are built there already, and
// returns that folder; each binary is named after its package's last path
// element. The first build downloads the peer's modules from the proxy.
func BuildGo(ctx context.Context, dir string, pkgs []string, progress io.Writer) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the peer in %s needs the Go toolchain: %w", dir, err)
	}
	ver, err := exec.CommandContext(ctx, goBin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("go version: %w", err)
	}
	h := sha256.New()
	h.Write(ver)
	h.Write([]byte(strings.Join(pkgs, "\n")))
	if err := hashModule(h, dir); err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "strata", "bench", filepath.Base(dir)+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	have := true
	for _, p := range pkgs {
		if st, err := os.Stat(filepath.Join(out, binName(p))); err != nil || !st.Mode().IsRegular() {
			have = false
		}
	}
	if have {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if progress != nil {
		fmt.Fprintf(progress, "building %s from %s (the first build downloads its modules)\n", strings.Join(pkgs, " "), dir)
	}
	t0 := time.Now()
	for _, p := range pkgs {
		// One package at a time: `go build -o DIR/` of several main
		// packages names them by import path, which for "." is the module.
		b := exec.CommandContext(ctx, goBin, "build", "-o", filepath.Join(tmp, binName(p)), p)
		b.Dir = dir
		var buf bytes.Buffer
		b.Stdout, b.Stderr = &buf, &buf
		if err := b.Run(); err != nil {
			return "", fmt.Errorf("go build %s in %s: %w\n%s", p, dir, err, buf.String())
		}
	}
	os.RemoveAll(out)
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	if progress != nil {
		fmt.Fprintf(progress, "built in %v\n", time.Since(t0).Round(time.Millisecond))
	}
	return out, nil
}

// binName is the binary BuildGo writes for package p.
func binName(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "." || p == "" {
		return "peer"
	}
	return filepath.Base(p)
}

// hashModule feeds every file of the module in dir (not of modules nested
// in it) into h, in a fixed order.
func hashModule(h io.Writer, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return nil
}

// FindBinary returns name from PATH, or the first of paths that exists.
func FindBinary(name string, paths ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// DebInstalled reports whether the Debian package pkg is installed.
func DebInstalled(ctx context.Context, pkg string) bool {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return err == nil && strings.Contains(string(out), "install ok installed")
}

// DebVersion returns the installed version of Debian package pkg, or "".
func DebVersion(ctx context.Context, pkg string) string {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// AptInstall installs Debian packages (apt-get update and a retry if the
// first attempt fails), its output going to progress.
func AptInstall(ctx context.Context, progress io.Writer, pkgs ...string) error {
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = progress, progress
		return cmd.Run()
	}
	fmt.Fprintf(progress, "apt-get install -y %s\n", strings.Join(pkgs, " "))
	args := append([]string{"install", "-y"}, pkgs...)
	if err := run(args...); err != nil {
		fmt.Fprintf(progress, "apt-get install failed (%v); running apt-get update and retrying\n", err)
		if err := run("update"); err != nil {
			return fmt.Errorf("apt-get update: %w", err)
		}
		if err := run(args...); err != nil {
			return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
		}
	}
	return nil
}
