package discord_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tunebot/bot"
	"tunebot/bot/discord"
	"tunebot/bot/discord/discordtest"
	"tunebot/session"
	"tunebot/store"
)

// linkRig is the Discord adapter against the fake with a handler whose /tune dashboard
// answers with a sign-in link once release is closed (nil: at once).
type linkRig struct {
	fake    *discordtest.Fake
	release chan struct{}
}

const signinLink = "https://tune.example.com/signin?token=SECRET-ONE-TIME-TOKEN"

func newLinkRig(t *testing.T, hold bool) *linkRig {
	t.Helper()
	r := &linkRig{fake: discordtest.New(t, opsGuild, opsApp)}
	if hold {
		r.release = make(chan struct{})
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := bot.NewHandler(bot.HandlerConfig{Store: db, Space: session.DefaultSpace(),
		Dashboard: func(session.Actor) (string, time.Time, error) {
			if r.release != nil {
				<-r.release
			}
			return signinLink, time.Now().Add(10 * time.Minute), nil
		}})
	a, err := discord.New(discord.Config{Token: "test-token", ApplicationID: opsApp, GuildID: opsGuild, ChannelID: opsChannel, APIURL: r.fake.APIURL, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
	r.fake.Wait("the gateway connection", func() bool { return r.fake.ConnectedLocked() })
	return r
}

// noLinkInChannel fails when any message in the channel shows the link.
func (r *linkRig) noLinkInChannel(t *testing.T) {
	t.Helper()
	for _, m := range r.fake.Messages(opsChannel) {
		if strings.Contains(messageText(m.Content, m.Embeds), "SECRET-ONE-TIME-TOKEN") {
			t.Errorf("the sign-in link was posted in the channel for anyone to redeem: %q", m.Content)
		}
	}
}

// channelSays waits for the channel's answer to eve (a message that mentions her), checks
// that it holds no link and says want, and returns it.
func (r *linkRig) channelSays(t *testing.T, want string) discordtest.Message {
	t.Helper()
	var got discordtest.Message
	r.fake.Wait("a channel message for eve", func() bool {
		for _, m := range r.fake.MessagesLocked(opsChannel) {
			if strings.HasPrefix(m.Content, "<@"+opsEve.ID+">") {
				got = m
				return true
			}
		}
		return false
	})
	r.noLinkInChannel(t)
	if !strings.Contains(got.Content, want) {
		t.Errorf("the channel's answer %q does not say %q", got.Content, want)
	}
	return got
}

// TestSignInLinkNeverReachesTheChannel: when Discord no longer takes the interaction's
// private answer (the interaction expired before the first answer, or before the deferred
// one was edited), the sign-in link goes to the person's direct messages and the channel
// hears only where it went; when the person accepts no direct message, nobody gets the link
// and the channel says to ask again. Any other private answer still falls back to the
// channel with a mention, as before.
func TestSignInLinkNeverReachesTheChannel(t *testing.T) {
	t.Run("expired before the first answer", func(t *testing.T) {
		r := newLinkRig(t, false)
		r.fake.ExpireNext()
		r.fake.Slash(opsEve, opsChannel, "dashboard")
		r.channelSays(t, "direct messages")
		dm := r.fake.DM(opsEve.ID)
		if ms := r.fake.Messages(dm); dm == "" || len(ms) != 1 || !strings.Contains(ms[0].Content, signinLink) {
			t.Errorf("direct messages with eve: %+v, want the link", ms)
		}
	})
	t.Run("expired before the deferred answer", func(t *testing.T) {
		r := newLinkRig(t, true)
		tok := r.fake.Slash(opsEve, opsChannel, "dashboard")
		r.fake.Wait("the deferred answer", func() bool { return len(r.fake.CallbacksLocked(tok)) > 0 })
		r.fake.Expire(tok)
		close(r.release)
		r.channelSays(t, "direct messages")
		if ms := r.fake.Messages(r.fake.DM(opsEve.ID)); len(ms) != 1 || !strings.Contains(ms[0].Content, signinLink) {
			t.Errorf("direct messages with eve: %+v, want the link", ms)
		}
	})
	t.Run("direct messages refused", func(t *testing.T) {
		r := newLinkRig(t, false)
		r.fake.CloseDMs(opsEve.ID)
		r.fake.ExpireNext()
		r.fake.Slash(opsEve, opsChannel, "dashboard")
		r.channelSays(t, "ask again")
		if dm := r.fake.DM(opsEve.ID); dm != "" && len(r.fake.Messages(dm)) != 0 {
			t.Errorf("a direct message went through to someone who accepts none: %+v", r.fake.Messages(dm))
		}
	})
	t.Run("other private answers fall back with a mention", func(t *testing.T) {
		r := newLinkRig(t, false)
		r.fake.ExpireNext()
		r.fake.Slash(opsEve, opsChannel, "presets")
		r.channelSays(t, "<@"+opsEve.ID+"> no presets yet")
		if dm := r.fake.DM(opsEve.ID); dm != "" {
			t.Errorf("a plain private answer opened a direct message %s", dm)
		}
	})
}

// TestRolesAreReadFromDiscord: the roles the monitoring page checks are the member's roles
// in the guild now, read from Discord: a role taken away is gone at the next read once the
// cache's time has passed, and a non-member holds none. Within RolesTTL the roles are reused
// rather than read at every page refresh.
func TestRolesAreReadFromDiscord(t *testing.T) {
	fake := discordtest.New(t, opsGuild, opsApp)
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	adapter := func(ttl time.Duration) *discord.Adapter {
		a, err := discord.New(discord.Config{Token: "test-token", ApplicationID: opsApp, GuildID: opsGuild, ChannelID: opsChannel, APIURL: fake.APIURL, Store: db, RolesTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ctx := context.Background()
	fresh := adapter(time.Nanosecond)
	if got := fresh.Roles(ctx, opsBob.ID); len(got) != 0 {
		t.Errorf("a non-member holds %v", got)
	}
	fake.SetRoles(opsBob.ID, "300000000000000001")
	if got := fresh.Roles(ctx, opsBob.ID); len(got) != 1 || got[0] != "300000000000000001" {
		t.Errorf("bob's roles %v, want the one he holds", got)
	}
	fake.SetRoles(opsBob.ID)
	if got := fresh.Roles(ctx, opsBob.ID); len(got) != 0 {
		t.Errorf("bob lost his role, yet holds %v", got)
	}

	cached := adapter(time.Hour)
	before := fake.MemberReads()
	for range 5 {
		cached.Roles(ctx, opsBob.ID)
	}
	if n := fake.MemberReads() - before; n != 1 {
		t.Errorf("5 reads within the TTL asked Discord %d times, want once", n)
	}
}
