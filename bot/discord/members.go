package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"
)

// DefaultRolesTTL is how long a member's roles read from Discord are reused: the monitoring
// page asks at every request (every few seconds while a page is open), and a role taken away
// counts on the page within this.
const DefaultRolesTTL = time.Minute

// maxMembers bounds the members whose roles are remembered; past it, the memory starts over.
const maxMembers = 4096

type memberRoles struct {
	roles []string
	at    time.Time
}

// Roles returns the roles user holds in the guild now (GET /guilds/{guild}/members/{user},
// reused for RolesTTL); none when they are no member or Discord cannot be asked (logged),
// so a role-based grant fails closed.
func (a *Adapter) Roles(ctx context.Context, user string) []string {
	if !snowflake.MatchString(user) {
		return nil
	}
	now := time.Now()
	a.membersMu.Lock()
	if m, ok := a.members[user]; ok && now.Sub(m.at) < a.cfg.RolesTTL {
		a.membersMu.Unlock()
		return m.roles
	}
	a.membersMu.Unlock()
	m, p, err := call(ctx, func(o ...discordgo.RequestOption) (*discordgo.Member, error) {
		return a.dg.GuildMember(a.cfg.GuildID, user, o...)
	})
	var roles []string
	if err != nil {
		a.log.Warn("reading a member's roles; none are counted", "user", user, "err", a.classify(err, p, "reading a guild member"))
	} else {
		roles = m.Roles
	}
	a.membersMu.Lock()
	defer a.membersMu.Unlock()
	if a.members == nil || len(a.members) >= maxMembers {
		a.members = map[string]memberRoles{}
	}
	a.members[user] = memberRoles{roles: roles, at: now}
	return roles
}
