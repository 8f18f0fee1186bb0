package cmd

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The commands' clock is the API server's: with the client's clock an hour
// behind, what status, refresh and the dashboard call now (ages of
// changes, the refresh annotation, the wait's deadline) follows the
// server's Date header.
func TestCommandsUseTheServersClock(t *testing.T) {
	skew := time.Hour
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer srv.Close()
	server := srv.URL
	flags := genericclioptions.NewConfigFlags(false)
	flags.APIServer = &server
	_, cs, err := newClient(flags)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}}
	for name, now := range map[string]func() time.Time{
		"status":    NewStatusOptions(flags, streams).Now,
		"refresh":   NewRefreshOptions(flags, streams).Now,
		"dashboard": NewDashboardOptions(flags, streams).Now,
	} {
		if d := now().Sub(time.Now().Add(skew)); d < -2*time.Second || d > 2*time.Second {
			t.Errorf("%s: its clock is %v off the server's", name, d)
		}
	}
}
