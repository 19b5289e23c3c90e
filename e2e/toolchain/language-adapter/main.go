// Command pulumi-language-adapter lets the Pulumi CLI v3.276 drive the language hosts of sdk/v3
// v3.68.0, the newest ones the Go module proxy serves (e2e/toolchain/README.md says why).
//
// build.sh installs it beside the CLI under the name of the host it stands in for
// (pulumi-language-python, pulumi-language-nodejs) and the real v3.68 host next to it under that
// name plus wrappedSuffix. The CLI starts it like any language host; it starts the real host with
// the same arguments, tells the CLI its own port, and hands every LanguageRuntime call to the real
// host as it came, bytes in and bytes out. Only the calls below are answered here, each because
// the 2023 host lacks it or reads a request field the v3.276 CLI no longer fills:
//
//	python  RunPlugin            fill the deprecated Program field from Info
//	python  InstallDependencies  a plugin with a `virtualenv` option: create it, install into it
//	nodejs  GeneratePackage      generate a TypeScript SDK with pkg/v3 v3.276.0's generator
//	nodejs  Link                 add the generated SDK to the program's package.json
//
// Source paths cited below are in the Go module cache: sdk/v3@v3.68.0 is the wrapped host,
// sdk/v3@v3.276.0 and pkg/v3@v3.276.0 are the CLI's side.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pulumi/pulumi/pkg/v3/codegen/cgstrings"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/nodejs/npm"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// wrappedSuffix names the real host beside the adapter: pulumi-language-python-v3.68 for the
// adapter installed as pulumi-language-python. build.sh sets it (-X main.wrappedSuffix=) from the
// pinned sdk version, as e2e/harness/toolchain.py derives it.
var wrappedSuffix = "-v3.68"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-adapter: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// The name it was started by says which host it stands in for; the directory of its own file
	// is where that host's real binary is.
	language := strings.TrimPrefix(filepath.Base(os.Args[0]), "pulumi-language-")
	overrides, ok := map[string]*grpc.ServiceDesc{"python": pythonCalls(), "nodejs": nodejsCalls()}[language]
	if !ok {
		return fmt.Errorf("started as %q: install it as pulumi-language-python or pulumi-language-nodejs", os.Args[0])
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	wrapped := filepath.Join(filepath.Dir(self), "pulumi-language-"+language+wrappedSuffix)

	host, port, err := startHost(wrapped, os.Args[1:])
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient("127.0.0.1:"+port,
		grpc.WithTransportCredentials(insecure.NewCredentials()), rpcutil.GrpcChannelOptions())
	if err != nil {
		return err
	}
	a := &adapter{conn: conn, host: pulumirpc.NewLanguageRuntimeClient(conn)}

	served, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			s.RegisterService(overrides, a)
			return nil
		},
		Options: []grpc.ServerOption{
			grpc.ForceServerCodec(wireCodec{}),
			grpc.UnknownServiceHandler(a.passThrough),
		},
	})
	if err != nil {
		return err
	}
	// The CLI reads a language host's port from the first line of its stdout; whatever the real
	// host prints after its own port follows ours.
	fmt.Printf("%d\n", served.Port)
	go func() { _, _ = io.Copy(os.Stdout, host.rest) }()

	// The CLI ends a language host with a signal: pass it on. The real host also stops by itself
	// when the engine it health-checks goes away.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for s := range signals {
			_ = host.cmd.Process.Signal(s)
		}
	}()
	select {
	case err := <-served.Done:
		_ = host.cmd.Process.Kill()
		return err
	case err := <-host.exited:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		return err
	}
}

type runningHost struct {
	cmd    *exec.Cmd
	rest   io.Reader // its stdout after the port line
	exited chan error
}

// startHost starts the real host and reads the port it prints first.
func startHost(path string, args []string) (*runningHost, string, error) {
	cmd := exec.Command(path, args...)
	cmd.Stderr = os.Stderr
	// If the adapter is killed outright, the host goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting the wrapped host: %w", err)
	}
	exited := make(chan error, 1)
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	port := strings.TrimSpace(first)
	if _, convErr := strconv.Atoi(port); err != nil || convErr != nil {
		_ = cmd.Process.Kill()
		return nil, "", fmt.Errorf("%s printed %q, not its port (%v)", path, first, errors.Join(err, cmd.Wait()))
	}
	go func() { exited <- cmd.Wait() }()
	return &runningHost{cmd: cmd, rest: lines, exited: exited}, port, nil
}

// --- passing calls through ----------------------------------------------------------------------

type adapter struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	conn *grpc.ClientConn
	host pulumirpc.LanguageRuntimeClient // the same connection, for the calls answered here
}

// wireFrame is one message of a call passed through: the bytes as they arrived.
type wireFrame []byte

// wireCodec leaves wireFrames as they are and encodes the typed messages of the calls answered
// here as protobuf, so one server carries both.
type wireCodec struct{}

func (wireCodec) Name() string { return "proto" }

func (wireCodec) Marshal(v any) ([]byte, error) {
	if frame, ok := v.(*wireFrame); ok {
		return *frame, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (wireCodec) Unmarshal(data []byte, v any) error {
	if frame, ok := v.(*wireFrame); ok {
		*frame = append((*frame)[:0], data...)
		return nil
	}
	return proto.Unmarshal(data, v.(proto.Message))
}

// passThrough relays any call not answered here to the real host, unchanged, as a bidirectional
// stream of frames (which covers unary and streaming calls alike), with its metadata, and returns
// the host's status and trailer as the call's own.
func (a *adapter) passThrough(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return errors.New("no method name on the stream")
	}
	md, _ := metadata.FromIncomingContext(in.Context())
	md = md.Copy()
	for key := range md {
		if strings.HasPrefix(key, ":") { // HTTP/2 pseudo-headers belong to this connection only
			delete(md, key)
		}
	}
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(in.Context(), md))
	defer cancel()
	out, err := a.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		method, grpc.ForceCodec(wireCodec{}))
	if err != nil {
		return err
	}
	go func() {
		for {
			var frame wireFrame
			if in.RecvMsg(&frame) != nil {
				_ = out.CloseSend()
				return
			}
			if out.SendMsg(&frame) != nil {
				return
			}
		}
	}()
	for first := true; ; first = false {
		var frame wireFrame
		if err := out.RecvMsg(&frame); err != nil {
			in.SetTrailer(out.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if first {
			if header, err := out.Header(); err == nil {
				_ = in.SendHeader(header)
			}
		}
		if err := in.SendMsg(&frame); err != nil {
			return err
		}
	}
}

// only is the LanguageRuntime service reduced to the named calls: registered with the adapter, they
// are answered by its methods below; every other call reaches passThrough.
func only(names ...string) *grpc.ServiceDesc {
	desc := pulumirpc.LanguageRuntime_ServiceDesc
	desc.Methods, desc.Streams = nil, nil
	for _, m := range pulumirpc.LanguageRuntime_ServiceDesc.Methods {
		if contains(names, m.MethodName) {
			desc.Methods = append(desc.Methods, m)
		}
	}
	for _, s := range pulumirpc.LanguageRuntime_ServiceDesc.Streams {
		if contains(names, s.StreamName) {
			desc.Streams = append(desc.Streams, s)
		}
	}
	return &desc
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// --- Python ---------------------------------------------------------------------------------------

func pythonCalls() *grpc.ServiceDesc { return only("RunPlugin", "InstallDependencies") }

// RunPlugin starts a Python plugin: a component provider or a policy pack given as a directory.
// The v3.276 CLI describes the plugin only in Info (RunPlugin in sdk/v3@v3.276.0
// go/common/resource/plugin/langruntime_plugin.go sets no Program), while the v3.68 host runs
// `python <req.Program>` and reads nothing else (RunPlugin in sdk/v3@v3.68.0
// python/cmd/pulumi-language-python/main.go): with Program empty it ran the directory it was
// started in, the project, instead of the plugin. So Program is filled from Info; the rest of the
// call, and its stream of output, goes to the real host as it is.
func (a *adapter) RunPlugin(req *pulumirpc.RunPluginRequest, stream pulumirpc.LanguageRuntime_RunPluginServer) error {
	// Program is deprecated, and the only field the v3.68 host reads.
	if req.Program == "" && req.Info != nil { //nolint:staticcheck
		req.Program = filepath.Join(req.Info.ProgramDirectory, req.Info.EntryPoint) //nolint:staticcheck
	}
	out, err := a.host.RunPlugin(stream.Context(), req)
	if err != nil {
		return err
	}
	for {
		msg, err := out.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
}

// InstallDependencies, for a plugin whose PulumiPlugin.yaml names a `virtualenv`, makes that
// virtualenv exist and installs the plugin's requirements.txt (if it has one) into it; it is what
// `pulumi package add <dir>` asks first of a Python component. A missing virtualenv is made by
// the v3.276 Python toolchain's EnsureVenv (sdk/v3@v3.276.0 python/toolchain/pip.go: `python -m
// venv`, pip, setuptools and wheel upgraded, requirements.txt installed); into an existing one
// only requirements.txt is installed, so no upgrade from PyPI on every `package add`. The v3.68 host never sees the
// option (the CLI passes runtime options only in Info now; the 2023 host took them as its
// -virtualenv flag, main in sdk/v3@v3.68.0 python/cmd/pulumi-language-python/main.go), and with
// no virtualenv InstallDependenciesWithWriters (sdk/v3@v3.68.0 python/python.go) joins the empty
// path to the root: it turns the plugin's own directory into a virtualenv and upgrades pip there.
// Everything else (programs, and plugins without the option) goes to the real host unchanged.
//
// The plugin still runs with the first python3 on PATH (the v3.68 host's RunPlugin), so that
// must be the same virtualenv, as the e2e harness arranges.
func (a *adapter) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, stream pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	virtualenv, _ := req.GetInfo().GetOptions().AsMap()["virtualenv"].(string)
	if !req.IsPlugin || virtualenv == "" {
		return a.relayInstall(req, stream)
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(stream, req.IsTerminal)
	if err != nil {
		return err
	}
	defer closer.Close()
	root := req.Info.RootDirectory
	python, err := toolchain.ResolveToolchain(toolchain.PythonOptions{
		Root: root, ProgramDir: req.Info.ProgramDirectory, Virtualenv: virtualenv, Toolchain: toolchain.Pip,
	})
	if err != nil {
		return err
	}
	ctx := stream.Context()
	path, err := python.VirtualEnvPath(ctx)
	if err != nil {
		return err
	}
	if !toolchain.IsVirtualEnv(path) {
		if err := python.EnsureVenv(ctx, root, false, true, stdout, stderr); err != nil {
			return err
		}
	} else if _, err := os.Stat(filepath.Join(root, "requirements.txt")); err == nil {
		pip, err := python.ModuleCommand(ctx, "pip", "install", "-r", "requirements.txt")
		if err != nil {
			return err
		}
		pip.Dir, pip.Stdout, pip.Stderr = root, stdout, stderr
		if err := pip.Run(); err != nil {
			return fmt.Errorf("pip install -r requirements.txt in %s: %w", root, err)
		}
	}
	return closer.Close()
}

func (a *adapter) relayInstall(
	req *pulumirpc.InstallDependenciesRequest, stream pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	out, err := a.host.InstallDependencies(stream.Context(), req)
	if err != nil {
		return err
	}
	for {
		msg, err := out.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
}

// --- Node.js --------------------------------------------------------------------------------------

func nodejsCalls() *grpc.ServiceDesc { return only("GeneratePackage", "Link") }

// GeneratePackage writes the TypeScript SDK of a package, the first step of `pulumi package add`
// (GenSDK in pkg/v3@v3.276.0 cmd/pulumi/packages/packages.go). The v3.68 Node.js host does not
// implement it (no GeneratePackage in sdk/v3@v3.68.0 nodejs/cmd/pulumi-language-nodejs/main.go),
// so the adapter binds the schema the CLI sends and runs pkg/v3 v3.276.0's Node.js generator on it,
// the same generation as the CLI's own release.
func (a *adapter) GeneratePackage(
	ctx context.Context, req *pulumirpc.GeneratePackageRequest,
) (*pulumirpc.GeneratePackageResponse, error) {
	loader, err := schema.NewLoaderClient(req.LoaderTarget)
	if err != nil {
		return nil, err
	}
	defer loader.Close()
	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.Schema), &spec); err != nil {
		return nil, fmt.Errorf("the package schema: %w", err)
	}
	references := schema.NewCachedLoader(loader)
	pkg, diags, err := schema.BindSpec(spec, references, schema.ValidationOptions{AllowDanglingReferences: true})
	if err != nil {
		return nil, err
	}
	reply := &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}
	if diags.HasErrors() {
		return reply, nil // the CLI prints the diagnostics and stops
	}
	files, err := nodejsgen.GeneratePackage("pulumi-language-nodejs", pkg, req.ExtraFiles,
		req.LocalDependencies, req.Local, references)
	if err != nil {
		return nil, err
	}
	for name, content := range files {
		path := filepath.Join(req.Directory, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// Link makes the program depend on the SDKs GeneratePackage wrote, the second step of
// `pulumi package add` (LinkPackages in pkg/v3@v3.276.0 cmd/pulumi/packages/packages.go; it then
// asks InstallDependencies, which the v3.68 host answers with `npm install`). The 2023 protocol
// has no Link call at all (sdk/v3@v3.68.0 proto/go/language_grpc.pb.go), so the real host would
// answer "unimplemented". Each SDK's package.json names its npm package; the program's package
// manager (sdk/v3@v3.276.0 nodejs/npm) records it as a `file:` dependency.
func (a *adapter) Link(ctx context.Context, req *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	info := req.GetInfo()
	options := info.GetOptions().AsMap()
	manager, _ := options["packagemanager"].(string)
	packages, err := npm.ResolvePackageManager(npm.PackageManagerType(manager), info.ProgramDirectory)
	if err != nil {
		return nil, err
	}
	typescript, set := options["typescript"].(bool)
	typescript = typescript || !set // a Node.js project is TypeScript unless it says otherwise
	var imports []string
	for _, dep := range req.Packages {
		sdk := filepath.Join(info.RootDirectory, dep.Path)
		name, err := npmName(sdk)
		if err != nil {
			return nil, err
		}
		path, err := filepath.Rel(info.ProgramDirectory, sdk)
		if err != nil {
			return nil, err
		}
		if err := packages.Link(ctx, info.ProgramDirectory, name, path); err != nil {
			return nil, err
		}
		variable := cgstrings.Camel(dep.GetPackage().GetName())
		if typescript {
			imports = append(imports, fmt.Sprintf("  import * as %s from %q;", variable, name))
		} else {
			imports = append(imports, fmt.Sprintf("  const %s = require(%q);", variable, name))
		}
	}
	language := map[bool]string{true: "TypeScript", false: "JavaScript"}[typescript]
	return &pulumirpc.LinkResponse{ImportInstructions: fmt.Sprintf(
		"You can import the SDK in your %s code with:\n\n%s\n", language, strings.Join(imports, "\n"))}, nil
}

// npmName is the `name` in the package.json of a generated SDK.
func npmName(sdk string) (string, error) {
	data, err := os.ReadFile(filepath.Join(sdk, "package.json"))
	if err != nil {
		return "", fmt.Errorf("the generated SDK: %w", err)
	}
	var manifest struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil || manifest.Name == "" {
		return "", fmt.Errorf("%s/package.json names no package (%v)", sdk, err)
	}
	return manifest.Name, nil
}
