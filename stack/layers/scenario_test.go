package layers

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/stack"
)

var update = flag.Bool("update", false, "rewrite the expected lines of scenario files from the layers' output")

// Scenario files (testdata/scenarios/*.txt) drive one layer with events
// and list the events it must emit, so a reader sees a layer's behaviour
// without reading code:
//
//	layer pt2pt window=2 rto=20ms epoch=7 mtu=100 credit=1000
//	in down send b "hello"          one-way message to peer b
//	in down usend b "hello"         the same, marked Unreliable (a
//	                                cast's copy from mnak); an emitted
//	                                event so marked shows "unreliable"
//	in up deliver b 01 0000... "x"  datagram from b: header hex, then body
//	in up deliver b seq=3 00 "x"    the same with Event.Seq set (a cast
//	                                numbered by the multicast layer); an
//	                                emitted event with Seq shows "seq=3"
//	in up stable 2,0 / in down stable 2,0   a stability vector
//	in up timer 40ms                the clock reached 40ms
//	in down call b 5 100ms "req"    RPC 5 to b with deadline 100ms
//	in down cancel 5 / in down response b 5 "resp"
//	in down cast "x" / in up suspect b / in up block / in up exit
//	in down view 2 a,b,c            a new view (ID, members); "in up view
//	                                2 a,b rejoin=x": a view that ends at once
//	layer elect local=a members=a,b,c contact=x   group settings
//	                                (also castwindow=N, castbytes=N,
//	                                gossip=D, status=D)
//	out down send b <header hex> "payload"   an event the layer must emit
//	out up deliver b "body"
//
// Every "in" is followed by exactly the "out" lines it produces, in order.
type recorder struct{ lines []string }

func (r *recorder) Down(ev stack.Event) { r.lines = append(r.lines, format(stack.Down, ev)) }
func (r *recorder) Up(ev stack.Event)   { r.lines = append(r.lines, format(stack.Up, ev)) }

func format(d stack.Dir, ev stack.Event) string {
	s := fmt.Sprintf("%s %s", d, strings.ToLower(ev.Type.String()))
	if ev.Peer != "" {
		s += " " + string(ev.Peer)
	}
	if ev.Unreliable {
		s += " unreliable"
	}
	if ev.ID != 0 {
		s += fmt.Sprintf(" id=%d", ev.ID)
	}
	if ev.Seq != 0 {
		s += fmt.Sprintf(" seq=%d", ev.Seq)
	}
	if ev.Type == stack.EStable {
		s += " " + joinUints(ev.Stability())
	}
	if ev.Type == stack.ETimerReq || ev.Type == stack.ETimer {
		s += " " + ev.Time.String()
	}
	if ev.Err != nil {
		s += " err=" + ev.Err.Error()
	}
	if ev.View != nil {
		ms := make([]string, len(ev.View.Members))
		for i, m := range ev.View.Members {
			ms[i] = string(m)
		}
		s += fmt.Sprintf(" view=%d:%s", ev.View.ID, strings.Join(ms, ","))
	}
	if ev.Msg != nil {
		if d == stack.Down {
			if h := ev.Msg.Headers(); len(h) > 0 {
				s += " " + hex.EncodeToString(h)
			}
			body := []byte{}
			for _, p := range ev.Msg.Payload {
				body = append(body, p...)
			}
			s += " " + strconv.Quote(string(body))
		} else {
			s += " " + strconv.Quote(string(ev.Msg.Body()))
		}
	}
	return s
}

func joinUints(v []uint64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(out, ",")
}

func parseConfig(fields []string) (string, stack.Config, error) {
	var cfg stack.Config
	if len(fields) < 2 {
		return "", cfg, fmt.Errorf("layer line needs a layer name")
	}
	for _, kv := range fields[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", cfg, fmt.Errorf("bad setting %q", kv)
		}
		var err error
		switch k {
		case "window":
			cfg.Window, err = strconv.Atoi(v)
		case "mtu":
			cfg.MTU, err = strconv.Atoi(v)
		case "credit":
			cfg.Credit, err = strconv.Atoi(v)
		case "epoch":
			cfg.Epoch, err = strconv.ParseUint(v, 10, 64)
		case "rto":
			cfg.RTO, err = time.ParseDuration(v)
		case "maxrto":
			cfg.MaxRTO, err = time.ParseDuration(v)
		case "peertimeout":
			cfg.PeerTimeout, err = time.ParseDuration(v)
		case "ackdelay":
			cfg.AckDelay, err = time.ParseDuration(v)
		case "local":
			cfg.Local = stack.Addr(v)
		case "members":
			for _, m := range strings.Split(v, ",") {
				cfg.Members = append(cfg.Members, stack.Addr(m))
			}
		case "contact":
			cfg.Contact = stack.Addr(v)
		case "castwindow":
			cfg.CastWindow, err = strconv.Atoi(v)
		case "castbytes":
			cfg.CastBytes, err = strconv.Atoi(v)
		case "gossip":
			cfg.GossipEvery, err = time.ParseDuration(v)
		case "status":
			cfg.StatusEvery, err = time.ParseDuration(v)
		case "unreliable": // a layer above sends Unreliable events (as Build sets it for mnak)
			cfg.Unreliable, err = strconv.ParseBool(v)
		default:
			err = fmt.Errorf("unknown setting %q", k)
		}
		if err != nil {
			return "", cfg, err
		}
	}
	return fields[1], cfg, nil
}

// parseIn turns an "in" line into a direction and event.
func parseIn(rest string, now time.Duration) (stack.Dir, stack.Event, error) {
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0, stack.Event{}, fmt.Errorf("short in line")
	}
	dir := stack.Down
	if f[0] == "up" {
		dir = stack.Up
	}
	quoted := ""
	if i := strings.Index(rest, `"`); i >= 0 {
		q, err := strconv.Unquote(rest[i:])
		if err != nil {
			return 0, stack.Event{}, fmt.Errorf("bad quoted body: %v", err)
		}
		quoted = q
		f = strings.Fields(rest[:i])
	}
	ev := stack.Event{Now: now}
	switch f[1] {
	case "send", "usend":
		ev.Type, ev.Peer, ev.Msg = stack.ESend, stack.Addr(f[2]), stack.NewMsg([]byte(quoted))
		ev.Unreliable = f[1] == "usend"
	case "deliver":
		hx := f[3:]
		if len(hx) > 0 && strings.HasPrefix(hx[0], "seq=") {
			seq, err := strconv.ParseUint(hx[0][4:], 10, 64)
			if err != nil {
				return 0, ev, err
			}
			ev.Seq, hx = seq, hx[1:]
		}
		raw, err := hex.DecodeString(strings.Join(hx, ""))
		if err != nil {
			return 0, ev, err
		}
		ev.Type, ev.Peer, ev.Msg = stack.EDeliver, stack.Addr(f[2]), stack.Received(append(raw, quoted...))
	case "timer":
		d, err := time.ParseDuration(f[2])
		if err != nil {
			return 0, ev, err
		}
		ev.Type, ev.Time, ev.Now = stack.ETimer, d, d
	case "call":
		id, _ := strconv.ParseUint(f[3], 10, 64)
		d, err := time.ParseDuration(f[4])
		if err != nil {
			return 0, ev, err
		}
		ev.Type, ev.Peer, ev.ID, ev.Time, ev.Msg = stack.ECall, stack.Addr(f[2]), id, d, stack.NewMsg([]byte(quoted))
	case "cancel":
		id, _ := strconv.ParseUint(f[2], 10, 64)
		ev.Type, ev.ID = stack.ECancel, id
	case "cast":
		ev.Type, ev.Msg = stack.ECast, stack.NewMsg([]byte(quoted))
	case "suspect":
		ev.Type, ev.Peer = stack.ESuspect, stack.Addr(f[2])
	case "block":
		ev.Type = stack.EBlock
	case "stable":
		if len(f) < 3 {
			return 0, ev, fmt.Errorf("stable needs a vector")
		}
		var v []uint64
		for _, x := range strings.Split(f[2], ",") {
			n, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return 0, ev, err
			}
			v = append(v, n)
		}
		ev.Type, ev.Stable = stack.EStable, &v
	case "exit":
		ev.Type = stack.EExit
	case "flush":
		ev.Type = stack.EFlush
	case "view":
		if len(f) < 4 {
			return 0, ev, fmt.Errorf("view needs an ID and members")
		}
		id, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return 0, ev, err
		}
		v := &stack.View{ID: id}
		for _, m := range strings.Split(f[3], ",") {
			v.Members = append(v.Members, stack.Addr(m))
		}
		ev.Type, ev.View = stack.EView, v
		if len(f) > 4 {
			r, ok := strings.CutPrefix(f[4], "rejoin=")
			if !ok {
				return 0, ev, fmt.Errorf("bad view option %q", f[4])
			}
			ev.Peer = stack.Addr(r)
		}
	case "response":
		id, _ := strconv.ParseUint(f[3], 10, 64)
		ev.Type, ev.Peer, ev.ID, ev.Msg = stack.EResponse, stack.Addr(f[2]), id, stack.NewMsg([]byte(quoted))
	default:
		return 0, ev, fmt.Errorf("unknown event %q", f[1])
	}
	return dir, ev, nil
}

func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/*.txt")
	if len(files) == 0 {
		t.Fatal("no scenario files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScenario(t, file) })
	}
}

func runScenario(t *testing.T, file string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		layer   stack.Layer
		now     time.Duration
		pending []string // outputs not yet matched
		out     []string // rewritten file (update mode)
		checked int
	)
	flush := func(lineNo int) {
		if len(pending) > 0 && !*update {
			t.Errorf("%s:%d: layer emitted %d more event(s) than listed; first: %s", file, lineNo, len(pending), pending[0])
		}
		for _, p := range pending {
			out = append(out, "out "+p)
		}
		pending = nil
	}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			if *update {
				flush(n) // keep each in's outputs right under it
			}
			out = append(out, sc.Text())
		case strings.HasPrefix(line, "layer "):
			name, cfg, err := parseConfig(strings.Fields(line))
			if err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			spec, ok := All[name]
			if !ok {
				t.Fatalf("%s:%d: unknown layer %q", file, n, name)
			}
			layer = spec.New(cfg)
			out = append(out, line)
		case strings.HasPrefix(line, "in "):
			flush(n)
			dir, ev, err := parseIn(line[3:], now)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
			if ev.Type == stack.ETimer {
				now = ev.Time
			}
			rec := &recorder{}
			if dir == stack.Down {
				layer.Down(ev, rec)
			} else {
				layer.Up(ev, rec)
			}
			pending = rec.lines
			out = append(out, line)
		case strings.HasPrefix(line, "out "):
			if *update {
				continue
			}
			want := strings.Join(strings.Fields(line[4:]), " ")
			if len(pending) == 0 {
				t.Errorf("%s:%d: expected %q, layer emitted nothing more", file, n, want)
				continue
			}
			got := strings.Join(strings.Fields(pending[0]), " ")
			if got != want {
				t.Errorf("%s:%d:\n got  %s\n want %s", file, n, got, want)
			}
			pending = pending[1:]
			checked++
		default:
			t.Fatalf("%s:%d: cannot parse %q", file, n, line)
		}
	}
	flush(n)
	if *update {
		os.WriteFile(file, []byte(strings.Join(out, "\n")+"\n"), 0o644)
		return
	}
	if checked == 0 {
		t.Errorf("%s: no expected events checked", file)
	}
}
