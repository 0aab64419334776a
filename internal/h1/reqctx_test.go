package h1

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

type ctxKey struct{}

// TestReqCtxEndsAsWithCancel checks a request's context against what
// context.WithCancel's gives: its values, its end seen through Done, Err
// and context.Cause, contexts derived from it, context.AfterFunc and the
// functions the client waits with, stopped or not.
func TestReqCtxEndsAsWithCancel(t *testing.T) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	var x reqCtx
	x.init(local)
	if got := x.Value(http.LocalAddrContextKey); got != net.Addr(local) {
		t.Fatalf("Value(LocalAddrContextKey) = %v, want the connection's", got)
	}
	if got := x.Value(ctxKey{}); got != nil {
		t.Fatalf("Value(another key) = %v, want nil", got)
	}
	derived, cancelDerived := context.WithCancel(&x)
	defer cancelDerived()
	after := make(chan struct{})
	context.AfterFunc(&x, func() { close(after) })
	ran, stopped := 0, 0
	x.onCancel(func() { ran++ })
	id := x.onCancel(func() { stopped++ })
	x.onCancel(func() { ran++ }) // a third spills past the array
	if !x.stopOnCancel(id) {
		t.Fatal("stopOnCancel of a waiting function reported false")
	}
	if x.Err() != nil || derived.Err() != nil {
		t.Fatalf("ended before its cancel: %v, %v", x.Err(), derived.Err())
	}
	done := x.Done()
	x.cancel()
	x.cancel()
	select {
	case <-done:
	default:
		t.Fatal("Done not closed by cancel")
	}
	if !errors.Is(x.Err(), context.Canceled) || !errors.Is(context.Cause(&x), context.Canceled) {
		t.Fatalf("Err %v, Cause %v; want context.Canceled", x.Err(), context.Cause(&x))
	}
	if !errors.Is(derived.Err(), context.Canceled) {
		t.Fatalf("derived context: %v, want context.Canceled", derived.Err())
	}
	select {
	case <-after:
	case <-time.After(5 * time.Second):
		t.Fatal("context.AfterFunc's function did not run")
	}
	if ran != 2 || stopped != 0 {
		t.Fatalf("ran %d (want 2), stopped one ran %d times", ran, stopped)
	}
	if x.stopOnCancel(1) {
		t.Fatal("stopOnCancel after the end reported true")
	}
	late := make(chan struct{})
	if id := x.onCancel(func() { close(late) }); id != 0 {
		t.Fatalf("onCancel on an ended context gave id %d, want 0", id)
	}
	select {
	case <-late:
	case <-time.After(5 * time.Second):
		t.Fatal("a function waiting on an ended context did not run")
	}
}

// TestReqCtxDoneBeforeAsked checks that a context ended before anyone
// asked for Done gives a closed channel.
func TestReqCtxDoneBeforeAsked(t *testing.T) {
	var x reqCtx
	x.init(nil)
	x.cancel()
	select {
	case <-x.Done():
	default:
		t.Fatal("Done of an ended context not closed")
	}
}
