package cmd

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/completion"
	"k8s.io/kubectl/pkg/util/templates"

	_ "github.com/kubectl-cmsync/kubectl-cmsync/internal/kubectlcatalog" // before kubectl's packages: no catalog parsed at start
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

var (
	completionLong = templates.LongDesc(`
		Print a shell completion script for the kubectl-cmsync binary.

		For "kubectl cmsync <TAB>" (kubectl 1.26 or later) you need no script: put the
		kubectl_complete-cmsync helper from the release archive on your PATH next to
		kubectl-cmsync. kubectl's own completion then asks it for the plugin's
		commands, flags, ConfigMap and Secret names, namespaces and contexts.

		The scripts printed here complete "kubectl-cmsync" when you call the binary
		directly.`)

	completionExample = templates.Examples(`
		# kubectl cmsync <TAB>: install the helper shipped in the archive (krew does not)
		install -m 0755 kubectl_complete-cmsync /usr/local/bin/

		# bash, for kubectl-cmsync called directly, in this shell
		source <(kubectl cmsync completion bash)

		# zsh, every session
		kubectl cmsync completion zsh > "${fpath[1]}/_kubectl-cmsync"

		# fish
		kubectl cmsync completion fish > ~/.config/fish/completions/kubectl-cmsync.fish

		# PowerShell
		kubectl cmsync completion powershell | Out-String | Invoke-Expression`)
)

var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// NewCmdCompletion builds `kubectl cmsync completion SHELL`.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell",
		DisableFlagsInUseLine: true,
		Short:                 "Print a shell completion script",
		Long:                  completionLong,
		Example:               completionExample,
		ValidArgs:             completionShells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(completionShells, args[0]) {
				return usageError("completion needs one shell: one of %s\nSee 'kubectl cmsync completion --help' for usage.", strings.Join(completionShells, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(streams.Out, true)
			case "zsh":
				return root.GenZshCompletion(streams.Out)
			case "fish":
				return root.GenFishCompletion(streams.Out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(streams.Out)
			}
		},
	}
}

// registerCompletions adds dynamic completion to the commands under root:
// ConfigMap and Secret names for the NAME arguments, namespaces, contexts,
// clusters and users for the kubeconfig flags, pods and containers for diff,
// and the fixed values of -o, --strategy, --dry-run and --restart-via. Names are read from
// the cluster through kubectl's own completion code, with the --kubeconfig,
// --context and -n given on the command line being completed.
func registerCompletions(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	f := cmdutil.NewFactory(boundedTimeout{flags})
	completion.SetFactoryForCompletion(f)
	noFiles := cobra.ShellCompDirectiveNoFileComp

	flagCompletions := map[string]cobra.CompletionFunc{
		"namespace": func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return completion.CompGetResource(f, "namespace", toComplete), noFiles
		},
		"context": completion.ContextCompletionFunc,
		"cluster": completion.ClusterCompletionFunc,
		"user":    completion.UserCompletionFunc,
	}
	for name, fn := range flagCompletions {
		_ = root.RegisterFlagCompletionFunc(name, fn)
	}

	for _, c := range root.Commands() {
		fixed := map[string][]string{}
		switch c.Name() {
		case "status":
			c.ValidArgsFunction = objectNameCompletion(f, true)
			fixed["output"] = []string{"wide", "json", "yaml"}
		case "refresh":
			c.ValidArgsFunction = objectNameCompletion(f, true)
			fixed["output"] = []string{"wide", "json", "yaml"}
			fixed["strategy"] = []string{"auto", "annotate", "restart"}
			fixed["dry-run"] = []string{"none", "client", "server"}
			fixed["restart-via"] = []string{"template", "evict"}
		case "lint":
			fixed["output"] = []string{"table", "wide", "json", "yaml", "github"}
		case "dashboard":
			c.ValidArgsFunction = objectNameCompletion(f, true)
			fixed["restart-via"] = []string{"template", "evict"}
		case "diff":
			c.ValidArgsFunction = objectNameCompletion(f, true)
			_ = c.RegisterFlagCompletionFunc("pod", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				return completion.CompGetResource(f, "pod", toComplete), noFiles
			})
			_ = c.RegisterFlagCompletionFunc("container", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				pod, _ := cmd.Flags().GetString("pod")
				if pod == "" {
					return nil, noFiles
				}
				return completion.CompGetContainers(f, pod, toComplete), noFiles
			})
		}
		for flag, values := range fixed {
			if c.Flags().Lookup(flag) != nil {
				_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, noFiles))
			}
		}
	}
}

// objectNameCompletion completes the NAME arguments: ConfigMap names, and
// TYPE/NAME once a TYPE is typed (configmap/, cm/, secret/, deploy/,
// sts/, ...: every kind parseTargets takes); with --secrets also
// secret/NAME; a prefix of a workload kind offers that kind ("dep":
// deployment/). Names already on the line are left out; multi
// says whether the command takes more than one.
func objectNameCompletion(f cmdutil.Factory, multi bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if !multi && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list := func(resource, prefix, namePrefix string) []string {
			var out []string
			for _, name := range completion.CompGetResource(f, resource, namePrefix) {
				out = append(out, prefix+name)
			}
			return out
		}
		var comps []string
		if i := strings.IndexByte(toComplete, '/'); i >= 0 {
			prefix, name := toComplete[:i+1], toComplete[i+1:]
			if k, ok := lookupKind(toComplete[:i]); ok {
				// configmap, secret, or a workload: deployment/NAME...
				comps = list(strings.TrimSuffix(k.resource, "s"), prefix, name)
			}
		} else {
			comps = list("configmap", "", toComplete)
			secrets, _ := cmd.Flags().GetBool("secrets")
			if secrets && strings.HasPrefix("secret/", toComplete) {
				comps = append(comps, list("secret", "secret/", "")...)
			}
			comps = append(comps, kindCompletions(toComplete)...)
		}
		if system, _ := cmd.Flags().GetBool("include-system"); !system {
			// hidden by the commands too, unless --include-system
			comps = slices.DeleteFunc(comps, func(c string) bool { return inspect.SystemConfigMaps[c] })
		}
		return withoutArgs(comps, args), cobra.ShellCompDirectiveNoFileComp
	}
}

// kindCompletions are the workload kinds whose name starts with what is
// typed, as TYPE/ ("dep": deployment/); nothing before a first letter.
func kindCompletions(toComplete string) []string {
	if toComplete == "" {
		return nil
	}
	var out []string
	for _, k := range argKinds {
		if k.object == "" && strings.HasPrefix(k.names[0], strings.ToLower(toComplete)) {
			out = append(out, k.names[0]+"/")
		}
	}
	return out
}

// withoutArgs drops the completions already given as arguments.
func withoutArgs(comps, args []string) []string {
	return slices.DeleteFunc(comps, func(c string) bool { return slices.Contains(args, c) })
}

// completionRequestTimeout bounds each call that completion makes to the
// cluster, so that <TAB> against an unreachable cluster gives up quickly.
const completionRequestTimeout = "5s"

// boundedTimeout is the kubeconfig flags with --request-timeout set to
// completionRequestTimeout when the command line did not set one. Every
// method that builds a client goes through bound first.
type boundedTimeout struct {
	flags *genericclioptions.ConfigFlags
}

func (b boundedTimeout) bound() *genericclioptions.ConfigFlags {
	if t := b.flags.Timeout; t != nil && (*t == "" || *t == "0") {
		*t = completionRequestTimeout
	}
	return b.flags
}

func (b boundedTimeout) ToRESTConfig() (*rest.Config, error) { return b.bound().ToRESTConfig() }

func (b boundedTimeout) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return b.bound().ToDiscoveryClient()
}

func (b boundedTimeout) ToRESTMapper() (meta.RESTMapper, error) { return b.bound().ToRESTMapper() }

func (b boundedTimeout) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return b.bound().ToRawKubeConfigLoader()
}
