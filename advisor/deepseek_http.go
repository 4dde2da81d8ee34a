package advisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dsMaxResponse bounds what is read of one response body: a proposal is a few KB, and a
// misbehaving server must not make tunebot hold gigabytes.
const dsMaxResponse = 4 << 20

// dsUsage is the usage object of a DeepSeek chat completion. go-openai's Usage has no field
// for DeepSeek's prefix-cache counters, so the transport decodes the raw body itself.
type dsUsage struct {
	PromptTokens          int `json:"prompt_tokens"`
	CompletionTokens      int `json:"completion_tokens"`
	TotalTokens           int `json:"total_tokens"`
	PromptCacheHitTokens  int `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens int `json:"prompt_cache_miss_tokens"`
}

func (u dsUsage) detail() map[string]any {
	return map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens,
		"prompt_cache_hit_tokens": u.PromptCacheHitTokens, "prompt_cache_miss_tokens": u.PromptCacheMissTokens,
	}
}

// dsExchange records what the transport saw of one HTTP exchange. go-openai drops the
// headers of an error response (Retry-After) and the cache fields of the usage, so the
// transport fills this record, found through the request's context.
type dsExchange struct {
	status     int
	retryAfter time.Duration // 0 when the response named none
	model      string
	usage      *dsUsage
}

type dsExchangeKey struct{}

func dsWithExchange(ctx context.Context, x *dsExchange) context.Context {
	return context.WithValue(ctx, dsExchangeKey{}, x)
}

// dsDoer is the go-openai HTTP client: it adds to every request body what go-openai cannot
// express (DeepSeek's "thinking" switch, and the temperature exactly, since go-openai
// stores it as a float32 and omits 0), and keeps the parts of the response go-openai drops.
type dsDoer struct {
	inner       *http.Client
	temperature float64
	now         func() time.Time
}

func (d *dsDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		body, err = dsRewriteBody(body, d.temperature)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.inner.Do(req)
	if err != nil {
		return nil, err
	}
	// Read the body here, under the request's deadline, so a server that stalls mid-body is a
	// timeout like any other and go-openai decodes from memory.
	data, err := io.ReadAll(io.LimitReader(resp.Body, dsMaxResponse+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the response body: %w", err)
	}
	if len(data) > dsMaxResponse {
		return nil, fmt.Errorf("response body larger than %d bytes", dsMaxResponse)
	}
	if x, ok := req.Context().Value(dsExchangeKey{}).(*dsExchange); ok {
		x.status = resp.StatusCode
		x.retryAfter = dsParseRetryAfter(resp.Header.Get("Retry-After"), d.now())
		if resp.StatusCode/100 == 2 {
			var head struct {
				Model string   `json:"model"`
				Usage *dsUsage `json:"usage"`
			}
			if json.Unmarshal(data, &head) == nil {
				x.model, x.usage = head.Model, head.Usage
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// dsRewriteBody sets "thinking": {"type": "disabled"} (DeepSeek V4 thinks by default and then
// ignores the temperature) and the configured temperature in a chat-completions body.
func dsRewriteBody(body []byte, temperature float64) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("rewriting the request body: %w", err)
	}
	m["thinking"] = json.RawMessage(`{"type":"disabled"}`)
	m["temperature"] = json.RawMessage(strconv.FormatFloat(temperature, 'g', -1, 64))
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("rewriting the request body: %w", err)
	}
	return out, nil
}

// dsParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func dsParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
