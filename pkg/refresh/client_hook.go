package refresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// How a reload hook reaches the pod (--reload-hook-via).
const (
	// HookViaDirect: straight to the pod's address, from inside the
	// cluster's network (the controller).
	HookViaDirect = "direct"
	// HookViaProxy: through the API server's pod proxy
	// (pods/NAME:PORT/proxy), from anywhere the API server is reachable
	// (the CLI); it needs pods/proxy.
	HookViaProxy = "proxy"
)

// HookVias lists the values of --reload-hook-via.
var HookVias = []string{HookViaDirect, HookViaProxy}

// HookTimeout bounds one reload hook request.
const HookTimeout = 5 * time.Second

// hookBodyLimit is how much of a response is read: enough for an excerpt.
const hookBodyLimit = 4 << 10

// HookResponse is what a pod answered to its reload hook.
type HookResponse struct {
	Status int
	Body   []byte
}

// HookSender is the I/O edge of reload hooks: one request to one pod. The
// engine decides when (after the pod's remount is verified) and judges the
// answer; a sender only sends.
type HookSender interface {
	// Send sends h to pod namespace/name, whose address is h's pod IP.
	// An error is a request that got no HTTP answer.
	Send(ctx context.Context, namespace, pod string, h *Hook) (HookResponse, error)
	// Via names the transport: HookViaDirect or HookViaProxy.
	Via() string
}

// NewHookSender is the sender of a --reload-hook-via value (c is the
// proxy's client).
func NewHookSender(via string, c kubernetes.Interface) HookSender {
	if via == HookViaDirect {
		return DirectHookSender{}
	}
	return ProxyHookSender{Client: c}
}

// DirectHookSender sends to http://PODIP:PORT/PATH, with HookTimeout, and
// tries a refused connection again a few times (the application may be
// re-opening its port).
type DirectHookSender struct {
	// Client defaults to one with HookTimeout and no proxy from the
	// environment.
	Client *http.Client
	// Backoff of the retries on a refused connection (default
	// HookRetry).
	Backoff *wait.Backoff
}

// HookRetry is the backoff of a direct hook whose connection is refused:
// 4 tries within about 1.5 s.
var HookRetry = wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1}

// Via implements HookSender.
func (DirectHookSender) Via() string { return HookViaDirect }

// Send implements HookSender.
func (d DirectHookSender) Send(ctx context.Context, _, pod string, h *Hook) (HookResponse, error) {
	if h.podIP == "" {
		return HookResponse{}, fmt.Errorf("pod %s has no IP address", pod)
	}
	c := d.Client
	if c == nil {
		c = &http.Client{Timeout: HookTimeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	}
	c = noRedirects(c)
	b := HookRetry
	if d.Backoff != nil {
		b = *d.Backoff
	}
	u := "http://" + net.JoinHostPort(h.podIP, strconv.Itoa(h.Port)) + h.Path
	var resp HookResponse
	err := retry.OnError(b, utilnet.IsConnectionRefused, func() error {
		req, err := http.NewRequestWithContext(ctx, h.Method, u, nil)
		if err != nil {
			return err
		}
		r, err := c.Do(req)
		if err != nil {
			return err
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(r.Body, hookBodyLimit))
		resp = HookResponse{Status: r.StatusCode, Body: body}
		return nil
	})
	return resp, err
}

// ProxyHookSender sends through the API server's pod proxy,
// /api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH, with HookTimeout: the
// URL made by client-go's core REST client, sent by its authenticated
// HTTP client (so that the status and body come back as they are, JSON or
// not).
type ProxyHookSender struct{ Client kubernetes.Interface }

// Via implements HookSender.
func (ProxyHookSender) Via() string { return HookViaProxy }

// Send implements HookSender. The API server relays the pod's answer
// (status and body); its own refusals (forbidden, the pod unreachable)
// come back as their status too.
func (p ProxyHookSender) Send(ctx context.Context, namespace, pod string, h *Hook) (HookResponse, error) {
	var rc *rest.RESTClient
	if p.Client != nil {
		rc, _ = p.Client.CoreV1().RESTClient().(*rest.RESTClient)
	}
	if rc == nil || rc.Client == nil { // a fake clientset has none
		return HookResponse{}, errors.New("no REST client for the pod proxy")
	}
	path, query, _ := strings.Cut(h.Path, "?")
	// one AbsPath segment: its trailing slash is kept (Suffix drops it);
	// namespace and pod names are DNS labels, the path checked by ParseHook
	u := rc.Verb(h.Method).AbsPath("/api/v1/namespaces/" + namespace + "/pods/" + pod + ":" + strconv.Itoa(h.Port) + "/proxy" + path).URL()
	u.RawQuery = query
	ctx, cancel := context.WithTimeout(ctx, HookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, h.Method, u.String(), nil)
	if err != nil {
		return HookResponse{}, err
	}
	resp, err := noRedirects(rc.Client).Do(req)
	if err != nil {
		return HookResponse{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, hookBodyLimit))
	return HookResponse{Status: resp.StatusCode, Body: body}, nil
}

// noRedirects is c answering a redirect with the redirect itself, judged
// a failure (judgeHook): a pod must not send the sender elsewhere, with
// the operator's credentials (the proxy's client adds them at every hop)
// or from the controller's network position.
func noRedirects(c *http.Client) *http.Client {
	cp := *c
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}
