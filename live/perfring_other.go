//go:build !linux

package live

import (
	"errors"
	"sync/atomic"
)

// perfRings are Linux's (perfring_linux.go): elsewhere the stream engine
// reads a tracefs instance.
type perfRings struct {
	rings   []*perfRing
	lost    atomic.Uint64
	foreign atomic.Uint64
}

type perfRing struct{ cpu int }

func (r *perfRing) read(*[]byte, *uint64, func(uint64, []byte)) int { return 0 }

type ringCursor struct{}

func (r *perfRing) cursor() ringCursor                             { return ringCursor{} }
func (c *ringCursor) next(*[]byte, *uint64) (uint64, []byte, bool) { return 0, nil, false }
func (c *ringCursor) done() int                                    { return 0 }
func (c *ringCursor) free()                                        {}

func openPerfRings([]perfEvent, int) (*perfRings, error) {
	return nil, errors.New("perf events are Linux's")
}

func (p *perfRings) enable() error  { return nil }
func (p *perfRings) disable() error { return nil }
func (p *perfRings) close()         {}

func (p *perfRings) watch(chan<- struct{}) (func(), error) { return func() {}, nil }

func (p *perfRings) lostNow() uint64 { return p.lost.Load() }
