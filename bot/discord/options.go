package discord

import "github.com/bwmarrin/discordgo"

// The builders of Commands' options.

// str is a text option.
func str(name, desc string) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc}
}

// required marks o as one the command needs.
func required(o *discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
	o.Required = true
	return o
}

// integer is a whole-number option between lo (nil: none) and hi.
func integer(name, desc string, lo *float64, hi float64) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionInteger, Name: name, Description: desc, MinValue: lo, MaxValue: hi}
}

// boolean is a true/false option.
func boolean(name, desc string) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionBoolean, Name: name, Description: desc}
}

// presetOpt is a preset name chosen from the saved ones (typing another is allowed: the
// handler names what does not exist).
func presetOpt(desc string, req bool) *discordgo.ApplicationCommandOption {
	o := str("preset", desc)
	o.Autocomplete, o.Required = true, req
	return o
}

// sub is a subcommand of /tune with its options.
func sub(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: desc, Options: opts}
}

// group is a group of subcommands (preset, schedule).
func group(name, desc string, subs ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommandGroup, Name: name, Description: desc, Options: subs}
}
