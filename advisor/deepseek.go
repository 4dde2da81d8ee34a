// Package advisor holds the proposers of reward patches: the DeepSeek advisor, the numeric
// sampler (and the previous TPE sampler, for the benchmark) and the hybrid that shares the
// proposals between them (docs/design.md §5).
package advisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"tunebot/secret"
	"tunebot/session"
)

// Defaults of DeepSeekConfig.
const (
	DefaultBaseURL     = "https://api.deepseek.com"
	DefaultModel       = "deepseek-v4-flash"
	DefaultTimeout     = 3 * time.Minute
	DefaultTemperature = 0.2
	DefaultMaxRetries  = 3
	DefaultRetryBase   = time.Second
)

const (
	// dsRepairRounds is how many times a refused answer is sent back with its problems; the
	// answer after the last repair round is final.
	dsRepairRounds = 2
	// dsMaxTokens bounds the answer: a patch and a paragraph fit in far less, and a model
	// stuck emitting whitespace in JSON mode stops here.
	dsMaxTokens = 4096
	// dsRetryCap bounds one backoff delay, and dsRetryAfterCap the wait a Retry-After header
	// may impose, so a proposal never hangs on a server's say-so.
	dsRetryCap      = 30 * time.Second
	dsRetryAfterCap = 2 * time.Minute
	// dsEchoCap bounds the previous answer sent back in a repair round.
	dsEchoCap = 8000
)

// DeepSeekConfig configures the DeepSeek advisor. Zero fields take the defaults above. The
// API key is not part of it: it comes from the environment and is passed to NewDeepSeek.
type DeepSeekConfig struct {
	BaseURL string
	Model   string
	// Timeout bounds one HTTP request, reading the answer included.
	Timeout time.Duration
	// Temperature is sent as is; 0 means the default because DeepSeek treats 0 as unset.
	Temperature float64
	// MaxRetries is how often a transient failure (429, 5xx, transport error, timeout, blank
	// answer) is retried per request; 0 means DefaultMaxRetries, negative means never.
	MaxRetries int
	// RetryBase is the first backoff delay; it doubles per retry, with jitter.
	RetryBase time.Duration
	// HTTPClient carries the requests; nil means a fresh http.Client. Tests set it.
	HTTPClient *http.Client
	// Redact masks tunebot's secrets (secret.Process) in every field of every request and
	// audit entry, the model name and base URL included, besides the API key itself: a
	// model named "m-${DEEPSEEK_API_KEY}" must not carry the key out. nil masks the key only.
	Redact *secret.Redactor
}

func (c DeepSeekConfig) withDefaults() DeepSeekConfig {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Temperature == 0 {
		c.Temperature = DefaultTemperature
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

// DeepSeek proposes reward patches with a DeepSeek chat model through the OpenAI-compatible
// API. It implements session.Advisor.
type DeepSeek struct {
	cfg    DeepSeekConfig
	apiKey string
	client *openai.Client
	audit  session.AuditLog
	log    *slog.Logger
	now    func() time.Time
}

var _ session.Advisor = (*DeepSeek)(nil)

// NewDeepSeek returns the advisor. apiKey is DEEPSEEK_API_KEY's value; it is sent only in
// the Authorization header and never logged, audited or put in a prompt or error. audit may
// be nil (a connection test has no session to audit).
func NewDeepSeek(cfg DeepSeekConfig, apiKey string, audit session.AuditLog, logger *slog.Logger) (*DeepSeek, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, errors.New("DEEPSEEK_API_KEY is not set: the DeepSeek advisor needs it in the environment")
	}
	cfg = cfg.withDefaults()
	if !(cfg.Temperature > 0 && cfg.Temperature <= 2) {
		return nil, fmt.Errorf("advisor temperature %g must be in (0, 2]", cfg.Temperature)
	}
	if !strings.HasPrefix(cfg.BaseURL, "https://") && !strings.HasPrefix(cfg.BaseURL, "http://") {
		return nil, fmt.Errorf("advisor base URL %q must be an http(s) URL", cfg.BaseURL)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := &DeepSeek{cfg: cfg, apiKey: apiKey, audit: audit, log: logger, now: time.Now}
	// The model and the URL are sent (and audited) as redacted: a secret in either makes
	// the request fail rather than leave.
	d.cfg.Model, d.cfg.BaseURL = d.redact(cfg.Model), d.redact(cfg.BaseURL)
	oc := openai.DefaultConfig(apiKey)
	oc.BaseURL = strings.TrimRight(d.cfg.BaseURL, "/")
	oc.HTTPClient = &dsDoer{inner: cfg.HTTPClient, temperature: cfg.Temperature, now: d.now}
	d.client = openai.NewClientWithConfig(oc)
	return d, nil
}

// ProposalError is a proposal refused after every repair round: the model's answers kept
// breaking the rules. Its message is fit to show a person.
type ProposalError struct {
	Attempts int      // answers received, all refused
	Problems []string // what the last answer broke (sanitised: model text is untrusted)
}

func (e *ProposalError) Error() string {
	return fmt.Sprintf("the advisor's proposal was refused %d times; the last answer broke: %s",
		e.Attempts, strings.Join(e.Problems, "; "))
}

// CallError is a failed DeepSeek request: refused at once (400, 401, 402, 422) or still
// failing after the retries (429, 5xx, transport error, timeout, blank answers). Msg is
// fit to show a person and never contains the API key.
type CallError struct {
	Status   int // HTTP status, 0 for transport errors, timeouts and blank answers
	Attempts int
	Msg      string
	Err      error // detail for the log, with the key redacted
}

func (e *CallError) Error() string { return e.Msg }
func (e *CallError) Unwrap() error { return e.Err }

// dsAnswer is one answered request.
type dsAnswer struct {
	content string
	model   string
	usage   *dsUsage
	attempt int
	latency time.Duration
}

// dsCallMeta says what a request is for, for the audit.
type dsCallMeta struct {
	sessionID  string
	kind       string
	round      int
	promptHash string
}

// Propose asks the model for a patch of req.Base and returns it only when it passes the
// reward-space rules; see docs/design.md §5 for what the model is sent.
func (d *DeepSeek) Propose(ctx context.Context, req session.ProposalRequest) (session.Suggestion, error) {
	if req.Space == nil {
		return session.Suggestion{}, errors.New("proposal request has no reward space")
	}
	log := d.log.With("session", req.SessionID)
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: dsSystemPrompt(req.Space)},
		{Role: openai.ChatMessageRoleUser, Content: d.redact(dsContextPrompt(req, d.apiKey))},
	}
	var problems []string
	for round := 0; round <= dsRepairRounds; round++ {
		meta := dsCallMeta{sessionID: req.SessionID, kind: "advisor_call", round: round, promptHash: dsPromptHash(msgs)}
		ans, err := d.complete(ctx, msgs, meta, d.cfg.MaxRetries+1)
		if err != nil {
			return session.Suggestion{}, err
		}
		sug, probs := dsDecodeReply(ans.content, req)
		if len(probs) == 0 {
			d.auditCall(ctx, meta, ans.attempt, ans.model, ans.usage, "ok", ans.latency, 0)
			log.Info("advisor proposal", "model", ans.model, "round", round, "changes", sug.Patch.Len(), "confidence", sug.Confidence)
			sug.Model = ans.model
			return sug, nil
		}
		problems = dsSanitizeProblems(probs)
		d.auditCall(ctx, meta, ans.attempt, ans.model, ans.usage, "invalid: "+strings.Join(problems, "; "), ans.latency, 0)
		log.Warn("advisor answer refused", "model", ans.model, "round", round, "problems", len(problems))
		msgs = append(msgs,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: d.redact(dsCap(ans.content, dsEchoCap))},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: dsRepairPrompt(probs)},
		)
	}
	return session.Suggestion{}, &ProposalError{Attempts: dsRepairRounds + 1, Problems: problems}
}

// complete sends msgs and returns the first non-blank answer, retrying transient failures
// up to attempts times in all. Every failed request is audited here; the caller audits the
// answered one once it knows whether the answer was valid.
func (d *DeepSeek) complete(ctx context.Context, msgs []openai.ChatCompletionMessage, meta dsCallMeta, attempts int) (dsAnswer, error) {
	req := d.chatRequest(msgs)
	var last *CallError
	for attempt := 1; attempt <= attempts; attempt++ {
		x := &dsExchange{}
		cctx, cancel := context.WithTimeout(dsWithExchange(ctx, x), d.cfg.Timeout)
		start := d.now()
		resp, err := d.client.CreateChatCompletion(cctx, req)
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
		cancel()
		latency := d.now().Sub(start)
		if ctx.Err() != nil {
			d.auditCall(ctx, meta, attempt, x.model, x.usage, "cancelled", latency, 0)
			return dsAnswer{}, fmt.Errorf("asking DeepSeek: %w", ctx.Err())
		}
		model, outcome, fatal := d.modelName(x.model), "", false
		if err == nil {
			content := ""
			if len(resp.Choices) > 0 {
				content = resp.Choices[0].Message.Content
			}
			if resp.Model != "" {
				model = d.modelName(resp.Model) // audited, stored with the trial and shown
			}
			if strings.TrimSpace(content) != "" {
				return dsAnswer{content: content, model: model, usage: x.usage, attempt: attempt, latency: latency}, nil
			}
			last = &CallError{Msg: "DeepSeek returned a blank answer", Err: errors.New("blank content")}
			outcome = "blank content"
		} else {
			last = d.classify(err, timedOut)
			outcome = dsOutcome(last, timedOut)
			fatal = !timedOut && !dsRetryable(last.Status, err)
		}
		last.Attempts = attempt
		var delay time.Duration
		if !fatal && attempt < attempts {
			delay = d.backoff(attempt, x.retryAfter)
		}
		d.auditCall(ctx, meta, attempt, model, x.usage, outcome, latency, delay)
		// Each attempt is audited; the log has them at debug level only: the caller says
		// once what came of the call (the session's line, with the sampler standing in), and
		// an unreachable DeepSeek must not print a warning per retry before that.
		if fatal {
			d.log.Debug("deepseek request refused", "status", last.Status, "error", last.Err)
			return dsAnswer{}, last
		}
		if attempt == attempts {
			break
		}
		d.log.Debug("deepseek request failed, retrying", "attempt", attempt, "status", last.Status, "delay", delay, "error", last.Err)
		if err := dsWait(ctx, delay); err != nil {
			return dsAnswer{}, err
		}
	}
	last.Msg = dsExhaustedMessage(last, d.cfg.Timeout)
	return dsAnswer{}, last
}

// dsWait waits delay before the next attempt, or until ctx ends, which ends the call.
func dsWait(ctx context.Context, delay time.Duration) error {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("asking DeepSeek: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

// chatRequest is the request that sends msgs, every text redacted as it goes out.
func (d *DeepSeek) chatRequest(msgs []openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:       d.cfg.Model,
		Messages:    d.redactMessages(msgs),
		Temperature: float32(d.cfg.Temperature),
		// DeepSeek's API takes max_tokens; go-openai's replacement, MaxCompletionTokens,
		// sends max_completion_tokens, which DeepSeek does not read.
		//lint:ignore SA1019 DeepSeek reads max_tokens, not max_completion_tokens
		MaxTokens:      dsMaxTokens,
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	}
}

// backoff is the delay before retry number attempt: the server's Retry-After when it gave
// one (capped), else exponential from RetryBase with jitter in [d/2, d).
func (d *DeepSeek) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, dsRetryAfterCap)
	}
	delay := d.cfg.RetryBase << (attempt - 1)
	if delay <= 0 || delay > dsRetryCap {
		delay = dsRetryCap
	}
	half := delay / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

func dsRetryable(status int, err error) bool {
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		return true
	case status != 0:
		return false
	}
	// No status: a transport error (connection refused, reset, EOF mid-body).
	return err != nil
}

// classify turns a go-openai error into a CallError with the message a person sees.
func (d *DeepSeek) classify(err error, timedOut bool) *CallError {
	status, server := 0, ""
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, server = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr):
		status, server = reqErr.HTTPStatusCode, string(reqErr.Body)
	}
	server = dsCap(strings.Join(strings.Fields(d.redact(server)), " "), 200)
	ce := &CallError{Status: status, Err: errors.New(d.redact(err.Error()))}
	suffix := ""
	if server != "" {
		suffix = ": " + server
	}
	switch {
	case timedOut:
		ce.Msg = fmt.Sprintf("DeepSeek did not answer within %s", d.cfg.Timeout)
	case status == http.StatusBadRequest:
		ce.Msg = "DeepSeek rejected the request as malformed (400)" + suffix
	case status == http.StatusUnauthorized:
		ce.Msg = "DeepSeek rejected the API key (401): check DEEPSEEK_API_KEY"
	case status == http.StatusPaymentRequired:
		ce.Msg = "DeepSeek account balance is insufficient (402): top up the account"
	case status == http.StatusUnprocessableEntity:
		ce.Msg = "DeepSeek rejected the request parameters (422)" + suffix
	case status == http.StatusTooManyRequests:
		ce.Msg = "DeepSeek rate limit reached (429)"
	case status >= 500:
		ce.Msg = fmt.Sprintf("DeepSeek server error (%d)", status)
	case status != 0:
		ce.Msg = fmt.Sprintf("DeepSeek refused the request (%d)%s", status, suffix)
	default:
		ce.Msg = "could not reach DeepSeek: " + dsCap(ce.Err.Error(), 200)
	}
	return ce
}

func dsOutcome(e *CallError, timedOut bool) string {
	switch {
	case timedOut:
		return "timeout"
	case e.Status != 0:
		return fmt.Sprintf("http %d", e.Status)
	}
	return "transport error: " + dsCap(e.Err.Error(), 200)
}

func dsExhaustedMessage(e *CallError, timeout time.Duration) string {
	if e.Attempts <= 1 {
		return e.Msg
	}
	return fmt.Sprintf("%s (gave up after %d attempts)", e.Msg, e.Attempts)
}

// redact removes every occurrence of the API key and of tunebot's other secrets
// (cfg.Redact), for text that goes out or came from outside (a server's error message may
// echo the Authorization header).
func (d *DeepSeek) redact(s string) string {
	if d.apiKey != "" {
		s = strings.ReplaceAll(s, d.apiKey, secret.Mask)
	}
	return d.cfg.Redact.String(s)
}

// redactMessages returns msgs with every text redacted, as they are sent.
func (d *DeepSeek) redactMessages(msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		m.Content = d.redact(m.Content)
		out[i] = m
	}
	return out
}

// dsModelCap is the most runes of the model name an answer gives that are kept: a name is
// a few dozen; a hostile server's 200 KB one must not reach the store, the audit and the page.
const dsModelCap = 100

// modelName is the model an answer names as tunebot keeps it: printable on one line
// (session.Printable), secrets masked, at most dsModelCap runes.
func (d *DeepSeek) modelName(s string) string {
	return dsCap(d.redact(dsOneLine(s)), dsModelCap)
}

// auditCall records one HTTP call; retryIn is the wait before the next attempt, if any.
func (d *DeepSeek) auditCall(ctx context.Context, meta dsCallMeta, attempt int, model string, usage *dsUsage, outcome string, latency, retryIn time.Duration) {
	if d.audit == nil {
		return
	}
	detail := map[string]any{
		"prompt_sha256":   meta.promptHash,
		"model":           model,
		"requested_model": d.cfg.Model,
		"attempt":         attempt,
		"round":           meta.round,
		"outcome":         dsCap(d.redact(outcome), 2000), // redacted whole, then cut: a cut must not split a secret
		"latency_ms":      latency.Milliseconds(),
	}
	if usage != nil {
		detail["usage"] = usage.detail()
	}
	if retryIn > 0 {
		detail["retry_in_ms"] = retryIn.Milliseconds()
	}
	e := session.AuditEntry{Time: d.now(), SessionID: meta.sessionID, Kind: meta.kind, Actor: session.System, Detail: detail}
	// The audit must not depend on the proposal's deadline: a cancelled proposal is still
	// recorded.
	if err := d.audit.Append(context.WithoutCancel(ctx), e); err != nil {
		d.log.Error("auditing a DeepSeek call", "error", err)
	}
}

// dsPromptHash hashes the conversation as sent, so the audit can tell identical prompts.
func dsPromptHash(msgs []openai.ChatCompletionMessage) string {
	h := sha256.New()
	for _, m := range msgs {
		b, _ := json.Marshal([2]string{m.Role, m.Content})
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestResult is the outcome of a live connection test.
type TestResult struct {
	OK      bool
	Model   string // as the response names it
	Latency time.Duration
	Error   string // the failure as a person should read it, key redacted
}

// Test makes one tiny live round trip in JSON mode and reports the model that answered and
// how long it took. It does not retry: a test reports what the service does now.
func (d *DeepSeek) Test(ctx context.Context) (TestResult, error) {
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: `This is a connection test. Reply with exactly this JSON object and nothing else: {"ok": true}`},
		{Role: openai.ChatMessageRoleUser, Content: "Connection test: reply with the JSON object."},
	}
	meta := dsCallMeta{kind: "advisor_test", promptHash: dsPromptHash(msgs)}
	start := d.now()
	ans, err := d.complete(ctx, msgs, meta, 1)
	res := TestResult{Latency: d.now().Sub(start)}
	if err != nil {
		res.Error = d.redact(err.Error())
		return res, err
	}
	res.Model, res.Latency = ans.model, ans.latency
	var reply struct {
		OK bool `json:"ok"`
	}
	if jerr := json.Unmarshal([]byte(dsStripFence(ans.content)), &reply); jerr != nil || !reply.OK {
		res.Error = "DeepSeek answered, but not with the JSON asked for: " + SanitizeRationale(dsCap(d.redact(ans.content), 200))
		d.auditCall(ctx, meta, ans.attempt, ans.model, ans.usage, "invalid: not {\"ok\": true}", ans.latency, 0)
		return res, &CallError{Attempts: ans.attempt, Msg: res.Error, Err: errors.New("unexpected test reply")}
	}
	d.auditCall(ctx, meta, ans.attempt, ans.model, ans.usage, "ok", ans.latency, 0)
	res.OK = true
	return res, nil
}
