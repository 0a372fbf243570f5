package raftkv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Client talks to a Raft KV cluster: it sends each request to the server
// it believes leads, follows redirects (to the leader named, or else the
// next server), and after a timeout or a connection error tries the next
// server with the same request. A put retried this way may be applied
// twice; both applications write the same value at positions of the log
// before anything the client does afterwards, so its history stays
// linearizable. A Client is not safe for concurrent use.
type Client struct {
	addrs  []string // client addresses of servers 1..n
	leader int      // index into addrs of the presumed leader
	conns  []*clientConn
	// Timeout bounds one attempt at one server (default 3 s).
	Timeout time.Duration
}

type clientConn struct {
	c  net.Conn
	rd *bufio.Reader
}

// ErrUnavailable is returned when no server answered a request before
// the context ended.
var ErrUnavailable = errors.New("raftkv: no leader answered")

// NewClient returns a client of the servers at addrs (their client
// addresses, in id order).
func NewClient(addrs []string) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("raftkv: no server addresses")
	}
	return &Client{addrs: addrs, conns: make([]*clientConn, len(addrs)), Timeout: 3 * time.Second}, nil
}

// Close closes the client's connections.
func (c *Client) Close() {
	for i, cc := range c.conns {
		if cc != nil {
			cc.c.Close()
			c.conns[i] = nil
		}
	}
}

// Put sets key to value.
func (c *Client) Put(ctx context.Context, key, value string) error {
	_, err := c.do(ctx, Request{Op: "put", Key: key, Value: value})
	return err
}

// Get returns key's value and whether it is set.
func (c *Client) Get(ctx context.Context, key string) (string, bool, error) {
	r, err := c.do(ctx, Request{Op: "get", Key: key})
	return r.Value, r.Found, err
}

// Leader is the id (1..n) of the server the client last found leading.
func (c *Client) Leader() int { return c.leader + 1 }

func (c *Client) do(ctx context.Context, req Request) (Response, error) {
	var last error
	for ctx.Err() == nil {
		r, err := c.try(ctx, c.leader, req)
		switch {
		case err != nil:
			last = err
			c.drop(c.leader)
			c.leader = (c.leader + 1) % len(c.addrs)
			pause(ctx, 20*time.Millisecond)
		case r.Status == "ok":
			return r, nil
		case r.Status == "redirect" && r.Leader >= 1 && r.Leader <= len(c.addrs) && r.Leader-1 != c.leader:
			c.leader = r.Leader - 1
		case r.Status == "redirect" || r.Status == "timeout" || r.Status == "unavailable":
			// No leader known there (an election is going on), or the
			// request was not applied in time: try the next server.
			last = fmt.Errorf("server %d: %s", c.leader+1, r.Status)
			c.leader = (c.leader + 1) % len(c.addrs)
			pause(ctx, 20*time.Millisecond)
		default:
			return r, fmt.Errorf("raftkv: server %d: %s", c.leader+1, r.Error)
		}
	}
	return Response{}, fmt.Errorf("%w: %v (last: %v)", ErrUnavailable, ctx.Err(), last)
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *Client) drop(i int) {
	if c.conns[i] != nil {
		c.conns[i].c.Close()
		c.conns[i] = nil
	}
}

// try sends req to server i and reads its answer.
func (c *Client) try(ctx context.Context, i int, req Request) (Response, error) {
	deadline := time.Now().Add(c.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if c.conns[i] == nil {
		d := net.Dialer{Deadline: deadline}
		nc, err := d.DialContext(ctx, "tcp", c.addrs[i])
		if err != nil {
			return Response{}, err
		}
		c.conns[i] = &clientConn{c: nc, rd: bufio.NewReader(nc)}
	}
	cc := c.conns[i]
	if err := cc.c.SetDeadline(deadline); err != nil {
		return Response{}, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	if _, err := cc.c.Write(append(b, '\n')); err != nil {
		return Response{}, err
	}
	line, err := cc.rd.ReadBytes('\n')
	if err != nil {
		return Response{}, err
	}
	var r Response
	if err := json.Unmarshal(line, &r); err != nil {
		return Response{}, fmt.Errorf("server %d: bad answer: %w", i+1, err)
	}
	return r, nil
}
