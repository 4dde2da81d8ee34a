// Package notify pushes tunebot's notifications to phones: an ntfy topic and a generic
// JSON webhook. Both are outbox sinks (platforms "ntfy" and "webhook"), so an outage of
// either only delays a notification.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"tunebot/bot"
	"tunebot/secret"
	"tunebot/session"
)

// Platform names of the sinks in the outbox.
const (
	PlatformNtfy    = "ntfy"
	PlatformWebhook = "webhook"
)

// MaxBody caps a notification's text; phones show the first lines anyway.
const MaxBody = 4000

// Ntfy posts to one ntfy topic.
type Ntfy struct {
	endpoint string
	token    string
	client   *http.Client
}

var _ bot.Sink = (*Ntfy)(nil)

// NewNtfy returns a sink posting to server/topic. The access token, if any, comes from
// the environment variable NTFY_TOKEN only; it is sent, never logged. Server and topic
// pass through redact (tunebot's secrets, secret.Process) first: a topic that holds a
// secret's value posts to a masked topic rather than send the value to the server.
func NewNtfy(server, topic string, getenv func(string) string, client *http.Client, redact *secret.Redactor) (*Ntfy, error) {
	server, topic = redact.String(server), redact.String(topic)
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("ntfy server %q is not an http(s) URL", server)
	}
	if topic == "" || strings.ContainsAny(topic, "/?#") {
		return nil, fmt.Errorf("ntfy topic %q must be a non-empty name without / ? #", topic)
	}
	if client == nil {
		client = &http.Client{Timeout: 20 * time.Second}
	}
	return &Ntfy{endpoint: strings.TrimRight(server, "/") + "/" + url.PathEscape(topic), token: getenv("NTFY_TOKEN"), client: client}, nil
}

// Deliver posts the card's text with Title, Priority and Tags headers, and Click (the
// trial's page) when the card has a link. A card with an image (a clip's first frame) is
// sent as an ntfy attachment: the image is the body (PUT, Filename) and the text goes in the
// Message header. A server that takes no attachments gets the text alone.
func (n *Ntfy) Deliver(ctx context.Context, d bot.Delivery) error {
	c := d.Message.Card
	text := bot.PushText(c)
	if len(text) > MaxBody {
		text = text[:MaxBody]
	}
	if img, ok := image(c); ok {
		err := n.post(ctx, d.Message, http.MethodPut, bytes.NewReader(img.Data), func(h http.Header) {
			h.Set("Filename", img.Name)
			h.Set("Message", mime.QEncoding.Encode("utf-8", strings.TrimSpace(text)))
		})
		if !refusedAttachment(err) {
			return err
		}
	}
	return n.post(ctx, d.Message, http.MethodPost, strings.NewReader(text), nil)
}

func (n *Ntfy) post(ctx context.Context, m bot.Message, method string, body io.Reader, more func(http.Header)) error {
	c := m.Card
	req, err := http.NewRequestWithContext(ctx, method, n.endpoint, body)
	if err != nil {
		return bot.Permanent(fmt.Errorf("building ntfy request: %w", err))
	}
	// Header values must be Latin-1; RFC 2047 keeps a UTF-8 title intact (ntfy decodes it).
	req.Header.Set("Title", mime.QEncoding.Encode("utf-8", "tunebot: "+c.Title))
	req.Header.Set("Priority", priority(c))
	req.Header.Set("Tags", tags(m))
	if c.Link != "" {
		req.Header.Set("Click", c.Link)
	}
	if more != nil {
		more(req.Header)
	}
	if n.token != "" {
		req.Header.Set("Authorization", "Bearer "+n.token)
	}
	return send(n.client, req, "ntfy")
}

// image is the card's first PNG, the one a notification shows.
func image(c bot.Card) (bot.Attachment, bool) {
	for _, b := range c.Blocks {
		for _, a := range b.Attachments {
			if a.ContentType == bot.ContentPNG && len(a.Data) > 0 {
				return a, true
			}
		}
	}
	return bot.Attachment{}, false
}

// refusedAttachment reports whether ntfy refused the notification for its attachment
// (attachments off, too large, over the quota): a 4xx other than 429, which the text
// alone may pass.
func refusedAttachment(err error) bool {
	var pe *bot.PermanentError
	return errors.As(err, &pe)
}

func priority(c bot.Card) string {
	if c.Urgent {
		return "high"
	}
	return "default"
}

func tags(m bot.Message) string {
	switch m.Event {
	case session.EventProposalReady:
		return "raising_hand,robot"
	case session.EventSessionFinished:
		if m.Card.Urgent {
			return "x,robot"
		}
		return "checkered_flag,robot"
	}
	return "robot"
}

// Webhook posts every notification as JSON to one URL.
type Webhook struct {
	url    string
	client *http.Client
}

var _ bot.Sink = (*Webhook)(nil)

// NewWebhook returns a sink posting to rawURL.
func NewWebhook(rawURL string, client *http.Client) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("webhook URL %q is not an http(s) URL", rawURL)
	}
	if client == nil {
		client = &http.Client{Timeout: 20 * time.Second}
	}
	return &Webhook{url: rawURL, client: client}, nil
}

// Payload is the JSON a webhook receives.
type Payload struct {
	Event    session.EventKind `json:"event"`
	Session  string            `json:"session"`
	Title    string            `json:"title"`
	Text     string            `json:"text"`
	Urgent   bool              `json:"urgent"`
	Mentions []string          `json:"mentions,omitempty"`
	Card     bot.Card          `json:"card"`
}

// Deliver posts the payload.
func (w *Webhook) Deliver(ctx context.Context, d bot.Delivery) error {
	m := d.Message
	text := bot.PushText(m.Card)
	if len(text) > MaxBody {
		text = text[:MaxBody]
	}
	buf, err := json.Marshal(Payload{Event: m.Event, Session: m.Session, Title: m.Card.Title, Text: text, Urgent: m.Card.Urgent, Mentions: m.Card.Mentions, Card: m.Card})
	if err != nil {
		return bot.Permanent(fmt.Errorf("encoding webhook payload: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(buf))
	if err != nil {
		return bot.Permanent(fmt.Errorf("building webhook request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	return send(w.client, req, "webhook")
}

// send maps the answer: 2xx delivered; 429 retried after Retry-After; 408 and 5xx and
// transport errors retried with backoff; any other status can never succeed.
func send(client *http.Client, req *http.Request, what string) error {
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("posting to %s: %w", what, redact(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	err = fmt.Errorf("%s answered %s: %s", what, resp.Status, strings.TrimSpace(string(snippet)))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return bot.RetryAfter(retryAfter(resp.Header.Get("Retry-After")), err)
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return err
	}
	return bot.Permanent(err)
}

func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 30 * time.Second
}

// redact drops the URL from a transport error: a webhook URL often embeds its secret.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
