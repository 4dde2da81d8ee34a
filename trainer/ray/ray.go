// Package ray submits, follows and stops trainer jobs on a Ray cluster through the Jobs REST
// API of its head, the job server every head runs (by default on port 8265): Ray has no Go
// client, and this API is the one its own CLI and SDK use.
//
// A job's entrypoint is the command line Ray hands to a shell on the node it picks: the
// trainer's argv, single-quoted word by word after `exec bash -c SCRIPT`, so no word is ever
// read by a shell. SCRIPT only changes to the working directory and fills in {gpu_ids} from
// CUDA_VISIBLE_DEVICES, which Ray sets for a job that asked for GPUs, then becomes the
// trainer (exec): what Ray reports as the driver's exit code is the trainer's own, and a
// signal that killed it is said as one. Every answer of the head is read through a bound.
package ray

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tunebot/session"
)

// GPUIDsMarker stands in an argv word for the GPUs Ray gives the job; the entrypoint
// replaces it with their JSON list (`[0,1]`), the {gpu_ids} of the trainer contract.
const GPUIDsMarker = "@@TUNEBOT_GPU_IDS@@"

// Job is what one submission runs.
type Job struct {
	ID      string   // the submission id: letters, digits, '_', '.', '-'
	Argv    []string // the command, already expanded; GPUIDsMarker may appear inside words
	Workdir string   // where it starts, absolute; "": where Ray starts a job's command
	Env     []string // KEY=VALUE, the job's runtime_env.env_vars
	GPUs    int      // entrypoint_num_gpus; 0: none (and CUDA_VISIBLE_DEVICES empty)
	CPUs    float64  // entrypoint_num_cpus; 0: none reserved
	Memory  int64    // entrypoint_memory in bytes; 0: none reserved
	// Metadata is kept with the job and shown by `ray job list`; tunebot names the run
	// directory there, so a job of this id that is not its own is never taken for one.
	Metadata map[string]string
}

// States of a job as the head names them.
const (
	Pending   = "PENDING"
	Running   = "RUNNING"
	Stopped   = "STOPPED"
	Succeeded = "SUCCEEDED"
	Failed    = "FAILED"
)

// Info is a job as the head reports it (GET /api/jobs/{id}).
type Info struct {
	SubmissionID string `json:"submission_id"`
	Status       string `json:"status"`
	Message      string `json:"message"`
	ErrorType    string `json:"error_type"`
	// DriverExitCode is the command's exit code once it ended, negative when a signal
	// killed it (-9); nil when it never ran, or Ray stopped it.
	DriverExitCode *int              `json:"driver_exit_code"`
	DriverAgent    string            `json:"driver_agent_http_address"`
	Metadata       map[string]string `json:"metadata"`
}

// Finished reports whether the job will not change any more.
func (i Info) Finished() bool {
	return i.Status == Stopped || i.Status == Succeeded || i.Status == Failed
}

// Node is the address of the node the job's command runs on, "" before it has one.
func (i Info) Node() string {
	u, err := url.Parse(i.DriverAgent)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// ErrNotFound is the head's answer for a job it does not know.
var ErrNotFound = errors.New("no such job")

// ErrUnreachable marks a request the head did not answer: no connection, a timeout, or a
// proxy in front of it saying it is down (502, 503, 504).
var ErrUnreachable = errors.New("the head does not answer")

// APIError is a request the head answered with an error.
type APIError struct {
	Status  int
	Message string // the last line of what the head said, printable and capped
}

func (e *APIError) Error() string {
	switch e.Status {
	case http.StatusUnauthorized:
		return "the head requires a token (401): set RAY_AUTH_TOKEN to the cluster's token (`ray get-auth-token`)"
	case http.StatusForbidden:
		return "the head refused the token (403): RAY_AUTH_TOKEN is not the cluster's token (`ray get-auth-token`)"
	}
	return fmt.Sprintf("the head answered %d: %s", e.Status, e.Message)
}

// Unauthorized reports whether err is the head refusing tunebot for its token.
func Unauthorized(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden)
}

// Client talks to one head's job server.
type Client struct {
	// Address is the job server's base URL: http://head:8265, or https://host/prefix
	// behind a proxy (ParseAddress says what may be given).
	Address string
	// Token, when set, is sent with every request as "Authorization: Bearer TOKEN", as a
	// head started with RAY_AUTH_MODE=token requires. It is a secret: never logged.
	Token string
	// HTTP is the client requests go through; nil means one with connection timeouts.
	HTTP *http.Client
}

// Bounds of what is read of the head's answers.
const (
	maxInfo   = 1 << 20 // a job's record: its message holds at most 20,000 characters of log
	maxList   = 8 << 20 // the nodes of a large cluster
	maxError  = 64 << 10
	maxReason = 300
)

var defaultHTTP = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   10 * time.Second,
	ResponseHeaderTimeout: time.Minute,
	MaxIdleConnsPerHost:   8,
	IdleConnTimeout:       90 * time.Second,
}}

// ParseAddress checks a head's address as configured and returns it without a trailing
// slash: an http or https URL with a host, optionally a path prefix, and nothing else (no
// user or password: a secret does not belong in a config, and the token goes in a header).
func ParseAddress(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	switch {
	case s == "":
		return "", errors.New("empty: set it to the head's job server, e.g. http://ray-head:8265")
	case err != nil && strings.Contains(s, "://"):
		return "", fmt.Errorf("%q is not a URL: want the head's job server, e.g. http://ray-head:8265", s)
	case err != nil || u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want an http:// or https:// URL of the head's job server, e.g. http://ray-head:8265 (not the GCS address ray:// or host:6379)", s)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return "", fmt.Errorf("%q holds a user or password: give the token in RAY_AUTH_TOKEN instead", s)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q has a query or fragment; want the job server's base URL only", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %s is not 1-65535", s, p)
		}
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Submit starts j (POST /api/jobs/).
func (c *Client) Submit(ctx context.Context, j Job) error {
	entry, err := Entrypoint(j)
	if err != nil {
		return err
	}
	env := map[string]string{}
	for _, kv := range j.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if j.GPUs == 0 {
		env["CUDA_VISIBLE_DEVICES"] = "" // a job that asked for no GPU uses none
	}
	body := map[string]any{"entrypoint": entry, "submission_id": j.ID, "runtime_env": map[string]any{"env_vars": env}}
	if j.GPUs > 0 {
		body["entrypoint_num_gpus"] = j.GPUs
	}
	if j.CPUs > 0 {
		body["entrypoint_num_cpus"] = j.CPUs
	}
	if j.Memory > 0 {
		body["entrypoint_memory"] = j.Memory
	}
	if len(j.Metadata) > 0 {
		body["metadata"] = j.Metadata
	}
	var out struct {
		SubmissionID string `json:"submission_id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/jobs/", body, maxInfo, &out); err != nil {
		return err
	}
	if out.SubmissionID != j.ID {
		return fmt.Errorf("the head took the job as %q, not %q", Foreign(out.SubmissionID), j.ID)
	}
	return nil
}

// Job reports job id (GET /api/jobs/{id}); ErrNotFound when the head does not know it.
func (c *Client) Job(ctx context.Context, id string) (Info, error) {
	var i Info
	err := c.do(ctx, http.MethodGet, "/api/jobs/"+url.PathEscape(id), nil, maxInfo, &i)
	return i, err
}

// Stop asks the head to stop job id (POST /api/jobs/{id}/stop): SIGTERM to its command,
// SIGKILL a few seconds later. A job that already ended is no error.
func (c *Client) Stop(ctx context.Context, id string) error {
	var out struct {
		Stopped bool `json:"stopped"`
	}
	return c.do(ctx, http.MethodPost, "/api/jobs/"+url.PathEscape(id)+"/stop", nil, maxInfo, &out)
}

// MaxLogRead bounds the bytes of a job's log answer read for its end: past it, the end
// returned is that of what was read, marked as cut.
const MaxLogRead = 256 << 20

// LogEnd returns the last keep bytes of job id's log (GET /api/jobs/{id}/logs), and whether
// that is less than the whole log. The answer, one JSON string of the whole log, is
// decoded as it streams in and only its end is kept, so a long log costs no memory.
func (c *Client) LogEnd(ctx context.Context, id string, keep int) (string, bool, error) {
	resp, err := c.send(ctx, http.MethodGet, "/api/jobs/"+url.PathEscape(id)+"/logs", nil)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	if err := answerError(resp, c.Address); err != nil {
		return "", false, err
	}
	return tailStringField(io.LimitReader(resp.Body, MaxLogRead), "logs", keep)
}

// Version is the head's Ray version (GET /api/version).
func (c *Client) Version(ctx context.Context) (string, error) {
	var v struct {
		Ray string `json:"ray_version"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/version", nil, maxInfo, &v); err != nil {
		return "", err
	}
	return Foreign(v.Ray), nil
}

// Node is one live node of the cluster with what it has in all.
type Node struct {
	IP   string
	Head bool
	GPUs float64
	CPUs float64
}

// Nodes lists the cluster's live nodes (the state API, GET /api/v0/nodes).
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out struct {
		Data struct {
			Result struct {
				Result []struct {
					IP        string             `json:"node_ip"`
					Head      bool               `json:"is_head_node"`
					State     string             `json:"state"`
					Resources map[string]float64 `json:"resources_total"`
				} `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/v0/nodes?detail=1&limit=10000", nil, maxList, &out); err != nil {
		return nil, err
	}
	var nodes []Node
	for _, n := range out.Data.Result.Result {
		if n.State == "ALIVE" {
			nodes = append(nodes, Node{IP: Foreign(n.IP), Head: n.Head, GPUs: n.Resources["GPU"], CPUs: n.Resources["CPU"]})
		}
	}
	return nodes, nil
}

// GPUsInUse reads the cluster status the head keeps (GET /api/cluster_status): the GPUs
// held by running work and the cluster's GPUs in all; ok false while it has none yet (a
// head that just started reports nothing for a few seconds).
func (c *Client) GPUsInUse(ctx context.Context) (used, total float64, ok bool, err error) {
	var out struct {
		Data struct {
			ClusterStatus struct {
				LoadMetricsReport struct {
					Usage map[string][]float64 `json:"usage"`
				} `json:"loadMetricsReport"`
			} `json:"clusterStatus"`
		} `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/cluster_status", nil, maxList, &out); err != nil {
		return 0, 0, false, err
	}
	g := out.Data.ClusterStatus.LoadMetricsReport.Usage["GPU"]
	if len(g) != 2 {
		return 0, 0, false, nil
	}
	return g[0], g[1], true, nil
}

// do sends a request with a JSON body (nil for none) and decodes the JSON answer into out,
// reading at most limit bytes of it.
func (c *Client) do(ctx context.Context, method, path string, body any, limit int64, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := answerError(resp, c.Address); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("reading the answer of the Ray head at %s: %w: %w", c.Address, ErrUnreachable, err)
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("the Ray head at %s answered %s %s with more than %d bytes", c.Address, method, path, limit)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the Ray head at %s answered %s %s with what is not the JSON expected: %v (is it a Ray job server?)", c.Address, method, path, err)
	}
	return nil
}

// send sends one request, with the token when there is one.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Address+path, rd)
	if err != nil {
		return nil, fmt.Errorf("the Ray head's address %q: %w", c.Address, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("asking the Ray head at %s: %w", c.Address, ctx.Err())
		}
		return nil, fmt.Errorf("the Ray head at %s does not answer: %w", c.Address, errors.Join(ErrUnreachable, unwrapURL(err)))
	}
	return resp, nil
}

// unwrapURL drops url.Error's "Get \"http://…\":" prefix, which repeats the address.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// answerError is the error an answer of the head stands for, nil for a 2xx.
func answerError(resp *http.Response, addr string) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxError))
	msg := cmp.Or(LastLine(string(b)), "(no message)")
	switch resp.StatusCode {
	case http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrNotFound, msg)
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Errorf("the Ray head at %s does not answer (%d %s): %w", addr, resp.StatusCode, msg, ErrUnreachable)
	}
	return &APIError{Status: resp.StatusCode, Message: msg}
}

// LastLine is the last non-blank line of what Ray said (a Python traceback ends with the
// exception) as Foreign makes it, "" when it said nothing.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && l != "." {
			return Foreign(l)
		}
	}
	return ""
}

// Foreign is a string the head gave, as tunebot repeats it: printable (session.Printable)
// and at most 300 characters, the cut marked.
func Foreign(s string) string {
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason-1]) + "…"
	}
	return session.Printable(s)
}

// Entrypoint is the command line of j: `exec bash -c SCRIPT tunebot-job WORKDIR ARGV...`,
// every word single-quoted, the one form in which a shell interprets nothing inside.
func Entrypoint(j Job) (string, error) {
	if probs := jobProblems(j); len(probs) > 0 {
		return "", fmt.Errorf("ray job: %s", strings.Join(probs, "; "))
	}
	workdir := j.Workdir
	if workdir == "" {
		workdir = "."
	}
	script := `cd "$1" || exit 126; shift; gpu_ids="[${CUDA_VISIBLE_DEVICES:-}]"; exec "${@//` + GPUIDsMarker + `/$gpu_ids}"`
	words := []string{"exec", "bash", "-c", Quote(script), "tunebot-job", Quote(workdir)}
	for _, a := range j.Argv {
		words = append(words, Quote(a))
	}
	return strings.Join(words, " "), nil
}

var (
	idRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// jobProblems names everything in j a submission cannot carry: an id outside idRE, an empty
// argv, a relative workdir, an environment entry that is not KEY=VALUE, negative resources.
func jobProblems(j Job) []string {
	var probs []string
	if !idRE.MatchString(j.ID) {
		probs = append(probs, fmt.Sprintf("job id %q: want letters, digits, '_', '.', '-', starting with a letter or digit", j.ID))
	}
	if len(j.Argv) == 0 {
		probs = append(probs, "empty argv")
	}
	if j.Workdir != "" && !strings.HasPrefix(j.Workdir, "/") {
		probs = append(probs, fmt.Sprintf("workdir %q is not absolute", j.Workdir))
	}
	for _, kv := range j.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || !envKeyRE.MatchString(k) {
			probs = append(probs, fmt.Sprintf("env %q is not KEY=VALUE", kv))
		}
	}
	if j.GPUs < 0 || j.CPUs < 0 || j.Memory < 0 {
		probs = append(probs, "GPUs, CPUs and memory must not be negative")
	}
	return probs
}

// Quote single-quotes s for a POSIX shell: nothing inside is interpreted.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
