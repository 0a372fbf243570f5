package pbkv

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"strata/distsys/tla"
)

// Client is the Go client of the store: it follows the model's AClient.
// Each request carries the client's id and a sequence number; the client
// sends it to the replica it takes for the primary and, when that replica
// does not answer within Timeout (the client's stand-in for the model's
// fd) or its connection fails, sends the same request (same number, so a
// put is applied once) to the next replica in order; a redirect sends it
// to the replica named as primary. It gives up when ctx ends. One
// request at a time: not safe for concurrent use.
type Client struct {
	addrs   []string // replicas' client addresses, in replica order
	id      string
	seq     int64
	cur     int // index into addrs of the replica taken for the primary
	conn    net.Conn
	rd      *bufio.Reader
	Timeout time.Duration // per attempt (default 3 s)
}

// ErrNoReplica is returned (wrapped) when ctx ends before any replica
// answered.
var ErrNoReplica = errors.New("pbkv: no replica answered")

// NewClient returns a client of the replicas whose client addresses
// (host:port, replica 1 first) are addrs, with a fresh random id.
func NewClient(addrs []string) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("pbkv: no replica addresses")
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &Client{addrs: addrs, id: "c-" + hex.EncodeToString(b[:]), Timeout: 3 * time.Second}, nil
}

// ID is the client's id (the `from` of its requests).
func (c *Client) ID() string { return c.id }

// Close closes the connection to the current replica.
func (c *Client) Close() error {
	if c.conn != nil {
		err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}

// Put stores value under key; when it returns nil the put is on every
// live replica.
func (c *Client) Put(ctx context.Context, key, value string) error {
	_, err := c.do(ctx, "put", key, value)
	return err
}

// Get returns the value of key and whether it was ever written.
func (c *Client) Get(ctx context.Context, key string) (string, bool, error) {
	v, err := c.do(ctx, "get", key, "")
	if err != nil {
		return "", false, err
	}
	if s, err := v.AsString(); err == nil {
		return s, true, nil
	}
	return "", false, nil // NoValue: never written
}

func (c *Client) do(ctx context.Context, typ, key, value string) (tla.Value, error) {
	c.seq++
	req := tla.Record(tla.F("from", tla.String(c.id)), tla.F("key", tla.String(key)),
		tla.F("seq", tla.Int(c.seq)), tla.F("type", tla.String(typ)), tla.F("value", tla.String(value)))
	var last error
	failed := 0 // attempts in a row that got no reply
	for ctx.Err() == nil {
		resp, err := c.attempt(ctx, req)
		if err != nil {
			// Timeout or broken connection: suspect this replica, try
			// the next (the model's `await fd[replica]` branch).
			last = err
			c.Close()
			c.cur = (c.cur + 1) % len(c.addrs)
			if failed++; failed%len(c.addrs) == 0 {
				// Every replica failed in a row: pause before the next round.
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
				}
			}
			continue
		}
		failed = 0
		typV, _ := tla.Field(resp, "type")
		switch t, _ := typV.AsString(); t {
		case "ok":
			v, err := tla.Field(resp, "value")
			if err != nil {
				return tla.Value{}, fmt.Errorf("pbkv: reply %v: %w", resp, err)
			}
			return v, nil
		case "redirect":
			p, _ := tla.Field(resp, "primary")
			n, err := p.AsInt64()
			if err != nil || n < 1 || int(n) > len(c.addrs) {
				return tla.Value{}, fmt.Errorf("pbkv: redirect to %v: not a replica", p)
			}
			// Either the replica named has not yet noticed that a lower
			// one is down, or it names itself (a backup refused its
			// push): pause, then ask the one named.
			last = fmt.Errorf("pbkv: redirected to replica %d", n)
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
			}
			c.Close()
			c.cur = int(n) - 1
		case "error":
			m, _ := tla.Field(resp, "error")
			s, _ := m.AsString()
			return tla.Value{}, errors.New(s)
		default:
			return tla.Value{}, fmt.Errorf("pbkv: unexpected reply %v", resp)
		}
	}
	return tla.Value{}, fmt.Errorf("%w (last: %v): %w", ErrNoReplica, last, ctx.Err())
}

// attempt sends req to the current replica and waits for the reply with
// the request's sequence number.
func (c *Client) attempt(ctx context.Context, req tla.Value) (tla.Value, error) {
	deadline := time.Now().Add(c.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if c.conn == nil {
		d := net.Dialer{Deadline: deadline}
		conn, err := d.DialContext(ctx, "tcp", c.addrs[c.cur])
		if err != nil {
			return tla.Value{}, err
		}
		c.conn, c.rd = conn, bufio.NewReader(conn)
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return tla.Value{}, err
	}
	if err := WriteFrame(c.conn, req); err != nil {
		return tla.Value{}, err
	}
	for {
		resp, err := ReadFrame(c.rd)
		if err != nil {
			return tla.Value{}, err
		}
		seq, _ := tla.Field(resp, "seq")
		if n, _ := seq.AsInt64(); n == c.seq {
			return resp, nil
		}
		if t, _ := tla.Field(resp, "type"); tla.Equal(t, tla.String("error")) {
			return resp, nil
		}
	}
}
