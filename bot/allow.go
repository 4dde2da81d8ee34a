package bot

// Permission is something only allow-listed people may do; everyone may read.
type Permission string

// Permissions.
const (
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

// Allows reports whether user (holding roles) on platform may do p.
func (a AllowList) Allows(platform, user string, roles []string, p Permission) bool {
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
	case VerbStart, VerbAgent: // agent is a paid DeepSeek call
		return PermStart
	case VerbApprove, VerbReject, VerbEdit:
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
