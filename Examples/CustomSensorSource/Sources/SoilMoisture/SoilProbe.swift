import Foundation

/// The user's own sensor code: anything that can read a moisture in percent.
public protocol SoilProbe: Sendable {
    func readPercent() throws -> Double
}

/// A probe whose driver writes its reading as text to a file (as a kernel driver does in sysfs): a number of
/// per mille, "523" for 52.3 %.
public struct FileSoilProbe: SoilProbe {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func readPercent() throws -> Double {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let perMille = Int(text), (0...1000).contains(perMille) else {
            throw SoilProbeError(path: path, reason: "expected per mille (0...1000), read \"\(text.prefix(40))\"")
        }
        return Double(perMille) / 10
    }
}

public struct SoilProbeError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}
