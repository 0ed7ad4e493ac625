import Foundation
import PackagePlugin

/// Writes `BuildCommit.swift` (`let buildCommit = "<commit>[-dirty]"`, or "unknown" outside a git checkout) for the
/// target it is applied to, from `git` at build time.
///
/// Not the manifest's `Context.gitInformation`: SwiftPM caches an evaluated manifest until Package.swift changes, so an
/// incremental build after a new commit reported the old one. A build command runs again whenever one of its input
/// files changes, and the build checks them every time: the input files are those that change with every commit,
/// checkout or reset (`HEAD`, its reflog, the branch's ref, `packed-refs`) and the package's source files (so that
/// "-dirty" follows an edit). The file is rewritten only when its text changes, so a build after anything else
/// compiles nothing of it.
@main struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let package = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit.swift")
        let sources = context.package.sourceModules.flatMap { $0.sourceFiles.map(\.url) }
        let script = """
            cd "$1" || exit 1
            commit=$(git rev-parse --verify --quiet HEAD) || commit=unknown
            if [ "$commit" != unknown ] && [ -n "$(git --no-optional-locks status --porcelain --untracked-files=no)" ]
            then
                commit="$commit-dirty"
            fi
            text="// Written by the BuildCommit plugin at build time.
            let buildCommit = \\"$commit\\""
            [ "$(cat "$2" 2>/dev/null)" = "$text" ] || printf '%s\\n' "$text" >"$2"
            """
        return [
            .buildCommand(
                displayName: "Finding the commit of \(target.name)", executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", script, "BuildCommit", package.path, output.path],
                inputFiles: gitFiles(of: package) + sources, outputFiles: [output])
        ]
    }

    /// The files of the checkout's git directory that change when HEAD moves; those that exist.
    private func gitFiles(of package: URL) -> [URL] {
        var gitDirectory = package.appending(path: ".git")
        // In a worktree, .git is a file naming its own git directory, whose `commondir` names the shared one.
        if let link = firstLine(of: gitDirectory, after: "gitdir: ") {
            gitDirectory = resolve(link, in: package)
        }
        let commonDirectory = firstLine(of: gitDirectory.appending(path: "commondir"), after: "").map {
            resolve($0, in: gitDirectory)
        }
        let head = gitDirectory.appending(path: "HEAD")
        var files = [head, gitDirectory.appending(path: "logs/HEAD")]
        files.append((commonDirectory ?? gitDirectory).appending(path: "packed-refs"))
        if let branch = firstLine(of: head, after: "ref: ") {
            files.append((commonDirectory ?? gitDirectory).appending(path: branch))
        }
        return files.filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// The first line of a small file, without `prefix`; nil if the file cannot be read or does not start so.
    private func firstLine(of file: URL, after prefix: String) -> String? {
        guard let text = try? String(contentsOf: file, encoding: .utf8), text.hasPrefix(prefix) else { return nil }
        return text.dropFirst(prefix.count).prefix { $0 != "\n" }.trimmingCharacters(in: .whitespaces)
    }

    private func resolve(_ path: String, in directory: URL) -> URL {
        path.hasPrefix("/") ? URL(filePath: path) : directory.appending(path: path).standardizedFileURL
    }
}
