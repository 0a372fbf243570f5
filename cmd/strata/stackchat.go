package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"strata/stack"
	"strata/stack/group"
	"strata/stack/transport"
)

func stackChatCmd() *cobra.Command {
	var listen, join, props string
	var heartbeat, suspect time.Duration
	c := &cobra.Command{
		Use:   "chat GROUP",
		Short: "Interactive group chat: join GROUP, cast each line you type, print messages and views",
		Long: `chat joins (or, without --join, starts) the process group GROUP through a
stack with membership, virtual synchrony and total order (stack/group) and
runs an interactive demo: every line typed on stdin is cast to the group;
every message is printed with its sender, and every view change with its
members, so several terminals show the same messages in the same order and
the same views as members come and go. Ctrl-D leaves the group politely;
kill -9 makes the others suspect and remove this member after --suspect.`,
		Example: `  strata stack chat demo --listen udp:127.0.0.1:7000
  strata stack chat demo --listen udp:127.0.0.1:7001 --join udp:127.0.0.1:7000`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			to, err := withWAN(transport.Options{})
			if err != nil {
				return err
			}
			m, err := group.Join(jctx, args[0], group.Options{Listen: listen, Contact: join, Props: props, Heartbeat: heartbeat, SuspectAfter: suspect, Transport: to})
			if err != nil {
				return err
			}
			defer m.Close()
			return chat(ctx, m, args[0], cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "udp:127.0.0.1:0", "this member's transport address")
	f.StringVar(&join, "join", "", "a member's address to join through (none: start the group)")
	f.StringVar(&props, "props", "Total,Membership", "stack properties (must include Membership)")
	f.DurationVar(&heartbeat, "heartbeat", 100*time.Millisecond, "heartbeat interval")
	f.DurationVar(&suspect, "suspect", 2*time.Second, "silence after which a member is removed")
	addWANFlags(c)
	return c
}

// chat runs the demo until stdin ends (then leaves) or ctx ends.
func chat(ctx context.Context, m *group.Member, name string, in io.Reader, out io.Writer) error {
	fmt.Fprintf(out, "* %s: you are %s; type lines to cast them, Ctrl-D to leave\n", name, m.Addr())
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := m.Leave(lctx); err != nil {
					return err
				}
				fmt.Fprintf(out, "* left %s\n", name)
				return nil
			}
			if strings.TrimSpace(line) == "" {
				continue
			}
			if err := m.Cast([]byte(line)); err != nil {
				return err
			}
		case ev, ok := <-m.Events():
			if !ok {
				return nil
			}
			switch ev.Kind {
			case group.Message:
				fmt.Fprintf(out, "<%s> %s\n", ev.From, ev.Body)
			case group.View:
				fmt.Fprintf(out, "* view %d: %s\n", ev.View.ID, joinAddrs(ev.View.Members))
			case group.Block:
				fmt.Fprintf(out, "* view change under way\n")
			case group.Exit:
				fmt.Fprintf(out, "* out of the group\n")
				return nil
			}
		}
	}
}

func joinAddrs(as []stack.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, " ")
}
