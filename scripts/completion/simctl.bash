# bash completion for simctl (installed as share/bash-completion/completions/simctl by
# `cmake --install`; from a checkout: source scripts/completion/simctl.bash).
#
# Completes the subcommands, each subcommand's options (read from `simctl SUBCOMMAND --help`, so
# they follow the tool; a built-in list when that fails), `list`'s topics, and scenarios: YAML
# files and folders, and the names of the shipped scenarios (fig9, allreduce, ...) that simctl
# finds by name in <prefix>/share/adaptsim/scenarios or $ADAPTSIM_DATA/scenarios.

# The options of one subcommand ("" for simctl itself), from its --help, else a fixed list.
_simctl_options() {
  local tool=$1 sub=$2 opts
  opts=$("$tool" ${sub:+"$sub"} --help 2>/dev/null |
         grep -oE '^ +-[-a-zA-Z0-9,]+' | tr ',' '\n' | tr -d ' ' | grep -E '^-' | sort -u)
  if [[ -z $opts ]]; then
    case $sub in
      run) opts="--set --seed --calibration -o --out --threads --no-progress --trace-connections --timeline --live --help" ;;
      validate) opts="--set --calibration --help" ;;
      compare) opts="--set --calibration -o --out --threads --sim-seeds --help" ;;
      list) opts="--help" ;;
      *) opts="--help --version" ;;
    esac
  fi
  printf '%s\n' $opts
}

# The shipped scenarios' names, from the folders simctl searches for a bare name.
_simctl_scenario_names() {
  local tool=$1 bin dirs=() d f
  [[ -n ${ADAPTSIM_DATA:-} ]] && dirs+=("$ADAPTSIM_DATA/scenarios")
  bin=$(type -P "$tool" 2>/dev/null)
  [[ -n $bin ]] && dirs+=("$(dirname "$(readlink -f "$bin")")/../share/adaptsim/scenarios")
  for d in "${dirs[@]}"; do
    [[ -d $d ]] || continue
    for f in "$d"/*.yaml; do
      [[ -f $f ]] && f=${f##*/} && printf '%s\n' "${f%.yaml}"
    done
  done
}

_simctl() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  local tool=${words[0]} sub="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      run | validate | compare | list) sub=${words[i]}; break ;;
    esac
  done

  # Option values.
  case $prev in
    -o | --out | --trace-connections | --timeline | --link-stats)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -d -- "$cur"))
      return ;;
    --calibration)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -X '!*.yaml' -- "$cur") $(compgen -d -- "$cur"))
      return ;;
    --set | --seed | --threads | --sim-seeds | --link-stats-bin)
      return ;;
  esac

  if [[ -z $sub ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$(_simctl_options "$tool" "")" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "run validate compare list" -- "$cur"))
    fi
    return
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_simctl_options "$tool" "$sub")" -- "$cur"))
    return
  fi
  if [[ $sub == list ]]; then
    COMPREPLY=($(compgen -W "strategies topologies workloads models policies" -- "$cur"))
    return
  fi
  # The scenario: a YAML file, a folder on the way to one, or a shipped scenario's name.
  compopt -o filenames 2>/dev/null
  COMPREPLY=($(compgen -f -X '!*.yaml' -- "$cur") $(compgen -d -- "$cur")
             $(compgen -W "$(_simctl_scenario_names "$tool")" -- "$cur"))
}

complete -F _simctl simctl
