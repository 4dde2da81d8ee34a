package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"tunebot/session"
)

// clipView is what the page needs to show a trial's clip (issue 21).
type clipView struct {
	Format  string  `json:"format"` // mp4 or gif
	Seconds float64 `json:"seconds"`
	Width   int     `json:"width"`
	Height  int     `json:"height"`
	URL     string  `json:"url"`
	Poster  string  `json:"poster,omitempty"` // the first frame's URL, "" when there is none
}

func clipOf(t session.Trial) *clipView {
	if t.Clip == nil {
		return nil
	}
	base := fmt.Sprintf("/api/sessions/%s/trials/%d/%d/", t.SessionID, t.Number, t.Rung)
	v := &clipView{Format: t.Clip.Format, Seconds: t.Clip.Seconds, Width: t.Clip.Width, Height: t.Clip.Height,
		URL: base + "clip?v=" + short(t.Clip.SHA256)}
	if t.Clip.Poster != nil {
		v.Poster = base + "poster?v=" + short(t.Clip.Poster.SHA256)
	}
	return v
}

// clipRemovedNote is what the page says in place of a clip a prune deleted.
const clipRemovedNote = "clip removed by prune"

// short is a version tag for a clip's URL: a re-evaluated trial's new clip is a new URL.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// clip serves a trial's clip (poster: its first frame) with the checks of the policy
// download: a signed-in person whom the allow-list lets read now, within their page read
// limit (reader); the file is the one the engine recorded, found inside the sessions
// directory, and still the bytes that were checked (Options.Clips). It is streamed from
// the one descriptor that was checked, never read into memory or opened again by name.
// Range requests are answered, so a browser's player can seek.
func (s *Server) clip(poster bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.reader(w, r); !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		t, err := s.trial(ctx, r)
		if err != nil {
			s.fail(w, err)
			return
		}
		if s.opt.Clips == nil {
			s.fail(w, notFound("clips are not available in this tunebot"))
			return
		}
		f, err := s.opt.Clips(t, poster)
		if err != nil {
			if msg, ok := session.UserMessage(err); ok {
				status := http.StatusConflict // changed on disk since it was checked
				if errors.Is(err, session.ErrNotFound) {
					status = http.StatusNotFound
				}
				err = &problem{status, msg}
			}
			s.fail(w, err)
			return
		}
		defer f.Close()
		ctype, sum := "image/png", t.Clip.Poster
		if !poster {
			ctype, sum = t.Clip.ContentType(), &t.Clip.File
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "private, no-cache")
		w.Header().Set("ETag", `"`+sum.SHA256+`"`)
		http.ServeContent(w, r, "", time.Time{}, f.Section())
	}
}

// trial is the trial a clip request names.
func (s *Server) trial(ctx context.Context, r *http.Request) (session.Trial, error) {
	n, err1 := strconv.Atoi(r.PathValue("number"))
	rung, err2 := strconv.Atoi(r.PathValue("rung"))
	if err1 != nil || err2 != nil || n < 0 || rung < 0 {
		return session.Trial{}, badRequest("not a trial: %q @ %q", r.PathValue("number"), r.PathValue("rung"))
	}
	id := r.PathValue("id")
	trials, err := s.opt.Store.Trials(ctx, id)
	if err != nil {
		return session.Trial{}, err
	}
	for _, t := range trials {
		if t.Number == n && t.Rung == rung {
			return t, nil
		}
	}
	return session.Trial{}, notFound("session %s has no trial %d @ rung %d", id, n, rung)
}
