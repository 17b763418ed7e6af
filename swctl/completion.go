package swctl

import (
	"context"
	"flag"
	"fmt"
)

// completionCommand prints a shell's completion script; the scripts ask
// `swctl __complete` for the candidates, so verbs, flags and live names
// always match the binary and the switch.
func completionCommand() *Command {
	c := &Command{
		Name:    "completion",
		Args:    "bash|zsh|fish",
		Summary: "print the shell completion script for bash, zsh or fish",
		Long: `Print the completion script of a shell: verbs, flags, and names read live
from CONFIG_DB (ports, VLANs, addresses, routes, MACs, flows) through the
same --redis or $SWITCHYARD_REDIS the command line names.`,
		Examples: []string{
			"source <(swctl completion bash)        # or: swctl completion bash > /etc/bash_completion.d/swctl",
			"swctl completion zsh > \"${fpath[1]}/_swctl\"",
			"swctl completion fish > ~/.config/fish/completions/swctl.fish",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 1, 1); err != nil {
				return err
			}
			script, ok := completionScripts[args[0]]
			if !ok {
				return usagef(c, "unknown shell %q: want bash, zsh or fish", args[0])
			}
			_, err := fmt.Fprint(e.Stdout, script)
			return err
		}
	}
	return c
}

var completionScripts = map[string]string{
	"bash": `# bash completion for swctl (swctl completion bash)
_swctl() {
	local line="${COMP_LINE:0:COMP_POINT}" words cur out i
	# The words as typed, split at blanks only (COMP_WORDS also splits at
	# ":" and "=", which would cut MACs and addresses).
	read -ra words <<<"$line"
	if [[ -z $line || $line == *[[:space:]] ]]; then
		words+=("")
	fi
	cur="${words[${#words[@]}-1]}"
	out=$("${words[0]}" __complete "${words[@]:1}" 2>/dev/null) || return
	if [[ $out == "#files"* ]]; then
		compopt -o filenames 2>/dev/null || :
		COMPREPLY=($(compgen -f -- "$cur"))
		return
	fi
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$out" -- "$cur"))
	# bash replaces only what follows the last ":" or "=" of the word.
	local pre="${cur%"${cur##*[:=]}"}"
	if [[ -n $pre ]]; then
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]="${COMPREPLY[i]#"$pre"}"
		done
	fi
}
complete -F _swctl swctl
`,
	"zsh": `#compdef swctl
# zsh completion for swctl (swctl completion zsh)
_swctl() {
	local out
	out=$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null) || return
	if [[ $out == '#files'* ]]; then
		_files
		return
	fi
	local -a cands
	cands=("${(@f)out}")
	compadd -a cands
}
if [[ $funcstack[1] == _swctl ]]; then
	_swctl "$@"
else
	compdef _swctl swctl
fi
`,
	"fish": `# fish completion for swctl (swctl completion fish)
function __swctl_complete
	set -l words (commandline -opc)
	set -l cur (commandline -ct)
	set -l out ($words[1] __complete $words[2..-1] "$cur" 2>/dev/null)
	if test "$out[1]" = "#files"
		__fish_complete_path "$cur"
		return
	end
	printf '%s\n' $out
end
complete -c swctl -f -a '(__swctl_complete)'
`,
}
