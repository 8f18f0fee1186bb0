package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probes are the states /healthz and /readyz answer from.
type Probes struct {
	// leading: this replica holds the lease; synced: its loop's caches
	// are synced (it acts on changes).
	leading, synced atomic.Bool
	// Healthy is the leader election's check (nil: healthy).
	Healthy func(*http.Request) error
}

// ready: a standby replica is ready (it waits for the lease); the leader
// once its caches are synced.
func (p *Probes) ready() bool { return !p.leading.Load() || p.synced.Load() }

// Handler serves /metrics, /healthz and /readyz.
func Handler(m *Metrics, p *Probes) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if p.Healthy != nil {
			if err := p.Healthy(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.ready() {
			http.Error(w, "leading, caches not synced yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// WithProfiles serves Go's runtime profiles (net/http/pprof) at
// /debug/pprof/ beside h: heap, CPU, goroutines, for `go tool pprof`.
func WithProfiles(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", h)
	return mux
}

// serve listens on addr until ctx ends; the listen error is returned at
// once (a port in use), later errors on errs.
func serve(ctx context.Context, addr string, h http.Handler) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errs := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- err
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), errs, nil
}
