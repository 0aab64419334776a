//go:build !linux

package h1

import "net"

// watcher does nothing here: without epoll, a client that goes away is
// noticed when a write to it fails.
type watcher struct{}

type watch struct{}

func newWatcher() *watcher { return &watcher{} }

func (*watch) begin(*watcher, net.Conn, *requestBody, *reqCtx) {}

func (*watch) end() {}

func (*watcher) close() {}
