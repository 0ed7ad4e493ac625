import CoatyFiles
import Glibc

extension RoutingRuleSet {
    /// Loads every rule file in `directory`: the `*.json` files directly in it, in file-name order (bytewise),
    /// skipping names that start with "." (editor lock and temporary files) and JSON Schemas (`*.schema.json`).
    /// An empty directory gives an empty rule set.
    public static func load(directory: String) throws(RuleLoadError) -> RoutingRuleSet {
        let names: [String]
        do {
            names = try FileSystem.entries(of: directory)
        } catch {
            throw RuleLoadError(problems: [
                RuleFileProblem(file: directory, location: .file, reason: "cannot list the directory: \(error)")
            ])
        }
        let ruleFiles = names.filter(isRuleFileName).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        return try load(files: ruleFiles.map { prefix + $0 })
    }

    /// Loads a rules path: a directory as `load(directory:)` does, anything else as a single rule file.
    public static func load(path: String) throws(RuleLoadError) -> RoutingRuleSet {
        var information = stat()
        let isDirectory = stat(path, &information) == 0 && (information.st_mode & S_IFMT) == S_IFDIR
        return try isDirectory ? load(directory: path) : load(files: [path])
    }

    /// Loads the given rule files, in this order. Every problem in every file is reported, including names
    /// defined twice across files.
    public static func load(files: [String]) throws(RuleLoadError) -> RoutingRuleSet {
        var rules: [RoutingRule] = []
        var problems: [RuleFileProblem] = []
        for file in files {
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.contents(of: file, limit: maximumFileSize)
            } catch {
                problems.append(RuleFileProblem(file: file, location: .file, reason: error.reason))
                continue
            }
            let reader = RuleFileReader(file: file, bytes: bytes)
            rules += reader.rules
            problems += reader.problems
        }
        var ruleSet: RoutingRuleSet?
        do {
            ruleSet = try RoutingRuleSet(rules)
        } catch {
            problems += error.problems
        }
        guard let ruleSet, problems.isEmpty else {
            // File order, so that a duplicate name is listed among the other problems of its file.
            let fileIndex = Dictionary(files.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            let ordered = problems.enumerated().sorted {
                (fileIndex[$0.element.file] ?? 0, $0.offset) < (fileIndex[$1.element.file] ?? 0, $1.offset)
            }
            throw RuleLoadError(problems: ordered.map(\.element))
        }
        return ruleSet
    }

    /// Larger files are refused rather than read into memory; real rule files are a few kilobytes.
    public static let maximumFileSize = 1 << 20

    static func isRuleFileName(_ name: String) -> Bool {
        name.hasSuffix(".json") && !name.hasPrefix(".") && !name.hasSuffix(".schema.json")
    }
}

/// An errno, described as `strerror` does.
struct SystemError: Error, CustomStringConvertible {
    var code: Int32

    var description: String { String(cString: strerror(code)) }
}

/// Listing a rules directory, straight on POSIX (its files are read by `BoundedFile`).
enum FileSystem {
    static func entries(of directory: String) throws(SystemError) -> [String] {
        guard let handle = opendir(directory) else { throw SystemError(code: errno) }
        defer { closedir(handle) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(handle) else {
                if errno != 0 { throw SystemError(code: errno) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }
}
