package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"tunebot/bot"
	"tunebot/preset"
	"tunebot/session"
)

// fileHosts are where Discord serves uploads. The configured API's host may serve them too
// (a proxy in front of Discord, or a test's fake); no other host is asked, so a forged URL
// in an interaction cannot make tunebot fetch from inside its own network.
var fileHosts = map[string]bool{"cdn.discordapp.com": true, "media.discordapp.net": true}

// fileTimeout bounds one download: a preset file is a few KiB.
const fileTimeout = 15 * time.Second

// errRedirected marks a download that the server sent to a host tunebot does not ask.
var errRedirected = errors.New("redirected off Discord's CDN")

// CommandFile returns the file a /tune invocation uploads (the file option of import: the
// preset /tune export gave), or nil when it uploads none. Discord sends the option's value
// as the attachment's id and the attachment in the interaction's resolved data; an id
// without its attachment is an error that says so. The caller downloads the file and
// appends its text to CommandText's.
func CommandFile(d discordgo.ApplicationCommandInteractionData) (*discordgo.MessageAttachment, error) {
	words, sub, ok := subcommand(d)
	if !ok || strings.Join(words, " ") != "import" {
		return nil, nil
	}
	id := optionValue(sub, "file")
	if id == "" {
		return nil, nil
	}
	var att *discordgo.MessageAttachment
	if d.Resolved != nil {
		att = d.Resolved.Attachments[id]
	}
	if att == nil {
		return nil, session.Userf(nil, "the uploaded file (attachment %s) did not come with the command; attach it again", bot.Truncate(id, 30))
	}
	return att, nil
}

// withFile completes a command's text with the file it uploads, if any. It runs after the
// deferral (a download may outlast Discord's 3 seconds); a refusal is answered privately,
// naming the problem, and the command goes no further.
func (a *Adapter) withFile(ctx context.Context, h Handler, f *inflow, in bot.Interaction, d discordgo.ApplicationCommandInteractionData, text string) (string, bool) {
	att, err := CommandFile(d)
	if err == nil && att == nil {
		return text, true
	}
	// Nobody the allow-list would refuse makes tunebot fetch anything.
	if r, ok := h.(refuser); ok {
		if reply, allowed := r.Refuse(ctx, in, bot.Command{Verb: bot.VerbImport}); !allowed {
			a.answer(ctx, f, reply)
			return "", false
		}
	}
	var data []byte
	if err == nil {
		data, err = a.download(ctx, att)
	}
	if err != nil {
		a.answer(ctx, f, bot.Reply{Private: true, Text: err.Error()})
		return "", false
	}
	// The file stands where the json option's text would: after the name.
	return text + "\n" + string(data), true
}

// refuser is what bot.Handler offers to check the allow-list before a command is handled.
type refuser interface {
	Refuse(ctx context.Context, in bot.Interaction, cmd bot.Command) (bot.Reply, bool)
}

var _ refuser = (*bot.Handler)(nil)

// fileAllowed reports whether tunebot may download from u: Discord's CDN over https, or
// the configured API's own scheme and host.
func (a *Adapter) fileAllowed(u *url.URL) bool {
	if u.User != nil {
		return false
	}
	if u.Scheme == "https" && fileHosts[u.Host] {
		return true
	}
	return u.Scheme == a.api.Scheme && u.Host == a.api.Host
}

// download fetches an uploaded file for the grammar. It uses a plain client on the
// configured transport, never discordgo's: the CDN needs no token, and the bot token goes
// to the API only. Size is bounded twice (the declared size, then the body read through a
// limit), time by fileTimeout. Every refusal is a user error naming the problem.
func (a *Adapter) download(ctx context.Context, att *discordgo.MessageAttachment) ([]byte, error) {
	name := bot.Truncate(att.Filename, 60)
	if name == "" {
		name = "(no name)"
	}
	limit := preset.MaxImportBytes
	if att.Size > limit {
		return nil, session.Userf(nil, "file %s is %d bytes; a preset file is at most %d (the file /tune export gives is a few KiB)", name, att.Size, limit)
	}
	raw := att.URL
	if raw == "" {
		raw = att.ProxyURL
	}
	u, err := url.Parse(raw)
	if err != nil || !a.fileAllowed(u) {
		where := "no URL"
		if err == nil && raw != "" {
			where = bot.Truncate(u.Scheme+"://"+u.Host, 60)
		}
		return nil, session.Userf(nil, "file %s is not on Discord's CDN (%s): tunebot downloads uploads only over https from cdn.discordapp.com or media.discordapp.net, or from its api_url", name, where)
	}
	client := &http.Client{Transport: a.cfg.Transport, Timeout: fileTimeout,
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 3 || !a.fileAllowed(r.URL) {
				return errRedirected
			}
			return nil
		}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("downloading file %s: %w", name, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, a.downloadFailed(name, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, session.Userf(nil, "file %s could not be downloaded: %s answered HTTP %d %s; attach it again", name, u.Host, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, a.downloadFailed(name, u, err)
	}
	if len(data) > limit {
		return nil, session.Userf(nil, "file %s is more than %d bytes, the most a preset file may be (it was declared as %d)", name, limit, att.Size)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte-order mark some editors write
	if !utf8.Valid(data) {
		return nil, session.Userf(nil, "file %s is not UTF-8 text: attach the .json file /tune export gave", name)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, session.Userf(nil, "file %s is empty: attach the .json file /tune export gave", name)
	}
	return data, nil
}

// downloadFailed logs why a download failed and names it for the asker.
func (a *Adapter) downloadFailed(name string, u *url.URL, err error) error {
	a.log.Warn("downloading an uploaded file", "file", name, "host", u.Host, "path", u.Path, "err", err)
	var ne net.Error
	switch {
	case errors.Is(err, errRedirected):
		return session.Userf(nil, "file %s could not be downloaded: %s redirected it off Discord's CDN", name, u.Host)
	case errors.As(err, &ne) && ne.Timeout():
		return session.Userf(nil, "file %s could not be downloaded: %s did not answer within %s; attach it again", name, u.Host, fileTimeout)
	}
	return session.Userf(nil, "file %s could not be downloaded from %s; attach it again", name, u.Host)
}
