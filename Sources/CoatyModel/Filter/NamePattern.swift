#if canImport(Glibc)
    import Glibc
#endif

/// A shell pattern for names on the command line (`greenhouse-*`, `pi-0[0-4]?`), matched as fnmatch(3) does,
/// case-sensitively; `/` is an ordinary character. A pattern without `*`, `?` or `[` matches only the name itself.
public struct NamePattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) {
        self.text = text
    }

    public func matches(_ name: String) -> Bool {
        fnmatch(text, name, 0) == 0
    }

    public var description: String { text }
}
