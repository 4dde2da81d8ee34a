package slack

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/slack/slacktest"
	"tunebot/store"
)

// These tests call respond directly: no command of the handler answers privately with a
// file today, yet a private file must never be shared where others can open it.

func newTestAdapter(t *testing.T) (*Adapter, *slacktest.Server) {
	t.Helper()
	fake := slacktest.New()
	t.Cleanup(fake.Close)
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a, err := New(Config{APIURL: fake.URL, Channel: "CTUNE", BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Refs: db,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a, fake
}

func fileReply(private bool, data []byte) bot.Reply {
	return bot.Reply{Private: private, Card: &bot.Card{Kind: "notice", Title: "preset p1", Blocks: []bot.Block{bot.Text("p1.json is the file"),
		{Kind: bot.BlockAttachments, Attachments: []bot.Attachment{{Name: "p1", Title: "preset p1", Data: data, Size: len(data), ContentType: bot.ContentJSON}}}}}}
}

func TestRespondFiles(t *testing.T) {
	data := []byte(`{"weights": {}}` + "\n")
	cases := []struct {
		name        string
		private     bool
		refuse      string // Slack error of the upload's completion
		wantChannel string // where the file is shared; "" none
		wantText    string // in the answer or a note to the person
	}{
		{"public goes beside the answer", false, "", "CTUNE", "file below: p1.json"},
		{"private goes to the person's DM", true, "", "DUEVE", "in your direct messages"},
		{"a refused upload is said", false, "not_in_channel", "", "could not attach p1.json: not_in_channel: invite the bot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, fake := newTestAdapter(t)
			if tc.refuse != "" {
				fake.Refuse("files.completeUploadExternal", tc.refuse)
			}
			ctx := context.Background()
			a.respond(ctx, target{Channel: "CTUNE", User: "UEVE", ResponseURL: fake.ResponseURL()}, fileReply(tc.private, data), "")
			st := fake.Snapshot()
			var said strings.Builder
			want := "in_channel"
			if tc.private {
				want = "ephemeral"
			}
			for _, r := range st.Responses {
				said.WriteString(r.Text + r.Blocks + "\n")
				if r.ResponseType != want {
					t.Errorf("answer is %s, want %s", r.ResponseType, want)
				}
			}
			for _, m := range st.Ephemerals {
				if m.User != "UEVE" {
					t.Errorf("a note for %s", m.User)
				}
				said.WriteString(m.Text + m.Blocks + "\n")
			}
			if !strings.Contains(said.String(), tc.wantText) {
				t.Errorf("said %q, want %q", said.String(), tc.wantText)
			}
			if tc.wantChannel == "" {
				if len(st.Uploads) != 0 {
					t.Errorf("uploads %+v", st.Uploads)
				}
				return
			}
			if len(st.Uploads) != 1 {
				t.Fatalf("uploads %+v", st.Uploads)
			}
			u := st.Uploads[0]
			if u.Channel != tc.wantChannel || u.Name != "p1.json" || !bytes.Equal(u.Data, data) {
				t.Errorf("upload %s to %s: %q", u.Name, u.Channel, u.Data)
			}
		})
	}
}
