package bot

import "slices"

// Permission is something only allow-listed people may do. Reading is open to everyone on
// a platform until a grant there names PermRead (see AllowList.Allows).
type Permission string

// Permissions.
const (
	// PermRead lets a person read sessions, presets and charts (the read commands, the
	// monitoring page and its sign-in link). Nobody needs it on a platform whose grants never
	// name it: there everyone in the channel may read, as they see the session threads anyway.
	PermRead   Permission = "read"
	PermStart  Permission = "start"
	PermDecide Permission = "decide" // approve, reject, edit
	PermPause  Permission = "pause"
	PermResume Permission = "resume"
	PermCancel Permission = "cancel"
)

// Grant allows users and holders of roles (Slack user groups, Discord roles) on one
// platform to do Permissions (all of them when empty).
type Grant struct {
	Platform    string       `yaml:"platform" json:"platform"`
	Users       []string     `yaml:"users" json:"users"`
	Roles       []string     `yaml:"roles" json:"roles"`
	Permissions []Permission `yaml:"permissions" json:"permissions"`
}

// AllowList is the set of grants; nobody is allowed anything it does not grant.
type AllowList []Grant

// Allows reports whether user (holding roles) on platform may do p. PermRead is allowed to
// everyone on a platform none of whose grants names it; once one does (a read-only grant),
// only the people granted it (or every permission) may read there.
func (a AllowList) Allows(platform, user string, roles []string, p Permission) bool {
	if p == PermRead && !a.restrictsRead(platform) {
		return true
	}
	for _, g := range a {
		if g.Platform != platform || !g.grants(p) {
			continue
		}
		for _, u := range g.Users {
			if u == user && u != "" {
				return true
			}
		}
		for _, r := range g.Roles {
			for _, have := range roles {
				if r == have && r != "" {
					return true
				}
			}
		}
	}
	return false
}

// Grants is a platform's allow-list as its chat section configures it: users and roles
// allowed everything, and users and roles allowed to read only. With no read-only user or
// role, no grant names PermRead and everyone there may read.
func Grants(platform string, users, roles, readUsers, readRoles []string) AllowList {
	var out AllowList
	if len(users) > 0 || len(roles) > 0 {
		out = append(out, Grant{Platform: platform, Users: users, Roles: roles})
	}
	if len(readUsers) > 0 || len(readRoles) > 0 {
		out = append(out, Grant{Platform: platform, Users: readUsers, Roles: readRoles, Permissions: []Permission{PermRead}})
	}
	return out
}

// restrictsRead reports whether a grant on platform names PermRead.
func (a AllowList) restrictsRead(platform string) bool {
	for _, g := range a {
		if g.Platform == platform && slices.Contains(g.Permissions, PermRead) {
			return true
		}
	}
	return false
}

func (g Grant) grants(p Permission) bool {
	if len(g.Permissions) == 0 {
		return true
	}
	for _, x := range g.Permissions {
		if x == p {
			return true
		}
	}
	return false
}

// permissionOf is what a verb needs; "" means anyone may.
func permissionOf(v Verb) Permission {
	switch v {
	case VerbStatus, VerbBest, VerbPresets, VerbChart, VerbClip, VerbDashboard, VerbExport, VerbPolicy, VerbPreset, VerbWhy:
		return PermRead
	case VerbStart, VerbAgent: // agent is a paid DeepSeek call
		return PermStart
	case VerbApprove, VerbReject, VerbEdit, VerbPrefer, VerbGo, VerbPromote, VerbDrop:
		return PermDecide
	case VerbPause:
		return PermPause
	case VerbResume:
		return PermResume
	case VerbCancel:
		return PermCancel
	}
	return ""
}
