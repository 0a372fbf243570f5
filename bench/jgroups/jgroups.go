package jgroups

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"strata/bench/kit"
	"strata/internal/freeport"
	"strata/internal/procgroup"
)

// Version is the JGroups release the benchmarks run.
const Version = "5.5.6.Final"

// Artifact is its Maven coordinate.
const Artifact = "org.jgroups:jgroups:" + Version

// JarPath returns where Maven keeps the JGroups jar:
// ~/.m2/repository/org/jgroups/jgroups/V/jgroups-V.jar.
func JarPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("jgroups: locating ~/.m2: %w", err)
	}
	return filepath.Join(home, ".m2", "repository", "org", "jgroups", "jgroups",
		Version, "jgroups-"+Version+".jar"), nil
}

// EnsureJGroups returns the path of the JGroups jar, first fetching it with
// `mvn -q dependency:get -Dartifact=org.jgroups:jgroups:5.5.6.Final` if it is
// not in the local Maven repository. It fails if java (needed to run the jar)
// is not on PATH, or if the jar is missing and mvn is not on PATH.
func EnsureJGroups(ctx context.Context) (jarPath string, err error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("jgroups: java not found on PATH (JGroups needs Java 17+; on Debian: apt-get install openjdk-17-jre-headless): %w", err)
	}
	jar, err := JarPath()
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(jar); err == nil && st.Size() > 0 {
		return jar, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("jgroups: %s is missing and mvn is not on PATH to fetch %s (on Debian: apt-get install maven): %w", jar, Artifact, err)
	}
	cmd := exec.CommandContext(ctx, mvn, "-q", "dependency:get", "-Dartifact="+Artifact)
	procgroup.Own(cmd)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("jgroups: %s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(string(out), 4000))
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("jgroups: mvn dependency:get succeeded but %s is missing: %w", jar, err)
	}
	return jar, nil
}

// JavaVersion returns the first line of `java -version` (e.g. `openjdk
// version "17.0.15" 2025-04-15`), or "" if it cannot be run.
func JavaVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

// setup is what every JGroups benchmark run needs: the jar, java, free
// ports for the members and a stack file listing them for TCPPING.
type setup struct {
	jar, java, stackXML, stackFile string
	ports                          []int
	cleanup                        func()
}

// prepare fetches the jar if jar is "", finds java, picks a port per member
// (free for the stack's transport) and writes the stack spec builds for
// them to a temporary file.
func prepare(ctx context.Context, jar string, members int, spec StackSpec) (*setup, error) {
	var err error
	if jar == "" {
		if jar, err = EnsureJGroups(ctx); err != nil {
			return nil, err
		}
	}
	s := &setup{jar: jar, cleanup: func() {}}
	if s.java, err = exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("jgroups: java not found on PATH: %w", err)
	}
	if s.ports, err = freePorts(members); err != nil {
		return nil, err
	}
	if s.stackXML, err = BuildStack(jar, spec, s.ports); err != nil {
		return nil, fmt.Errorf("jgroups: %w", err)
	}
	dir, err := os.MkdirTemp("", "strata-jgroups-")
	if err != nil {
		return nil, err
	}
	s.cleanup = func() { os.RemoveAll(dir) }
	s.stackFile = filepath.Join(dir, strings.TrimSuffix(spec.Base, ".xml")+"-tcpping.xml")
	if err := os.WriteFile(s.stackFile, []byte(s.stackXML), 0o644); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// freePorts returns n ports free on 127.0.0.1 for TCP and, checked by
// binding each, for UDP too: the same number serves a TCP transport, a UDP
// one, and FD_SOCK2's TCP socket at an offset.
func freePorts(n int) ([]int, error) {
	for attempt := 0; attempt < 10; attempt++ {
		ports, err := freeport.TCP(n)
		if err != nil {
			return nil, err
		}
		ok := true
		for _, p := range ports {
			c, err := net.ListenPacket("udp4", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			c.Close()
		}
		if ok {
			return ports, nil
		}
	}
	return nil, fmt.Errorf("jgroups: no %d ports free for both TCP and UDP after 10 tries", n)
}

// member is one JVM of a JGroups benchmark run: its process, console
// and stdin.
type member struct {
	name string
	cmd  *exec.Cmd
	con  *console
	in   io.WriteCloser
}

// startMember starts JGroups tool class as member name, bound to the
// setup's i-th port (on CPU cpu when cpu >= 0), with args after the class.
// Its stdin stays open and silent until the run closes it: at EOF the
// tools' menu loops end.
func (s *setup) startMember(ctx context.Context, jvmArgs []string, i, cpu int, class, name string, args ...string) (*member, error) {
	argv := []string{s.java,
		"-Djava.net.preferIPv4Stack=true",
		"-Djgroups.bind_addr=127.0.0.1",
		"-D" + BindPortProperty + "=" + strconv.Itoa(s.ports[i]),
		"-Duser.language=en", "-Duser.country=US",
	}
	argv = append(argv, jvmArgs...)
	argv = append(argv, "-cp", s.jar, class, "-props", s.stackFile, "-name", name)
	argv = append(argv, args...)
	var err error
	if argv, err = kit.Pinned(cpu, argv); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	procgroup.Own(cmd)
	cmd.WaitDelay = 3 * time.Second
	con := newConsole()
	cmd.Stdout, cmd.Stderr = con, con
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, fmt.Errorf("jgroups: starting member %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); con.closeWith() }()
	return &member{name, cmd, con, in}, nil
}

// stopMembers kills every member's process group, reaps it, and returns
// what the members printed, member by member.
func stopMembers(ms []*member) string {
	for _, m := range ms {
		_ = procgroup.Kill(m.cmd)
		m.in.Close()
		<-m.con.done
	}
	var out strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&out, "==== member %s\n%s\n", m.name, stripANSI(m.con.String()))
	}
	return out.String()
}

// waitExited gives the members up to five seconds to leave by themselves.
func waitExited(ctx context.Context, ms []*member) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, m := range ms {
		m.con.waitClosed(ctx)
	}
}
