import CoatyJSON
import Foundation
import JsonLogic
import RoutingRules

/// A fresh directory under the system's temporary directory, removed again by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("rules-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        path = url.path
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Writes in place (open, truncate, write, close), as most editors do.
    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
    }

    /// Writes a temporary file and renames it over `name`, as editors that save atomically do.
    func saveByRename(_ name: String, _ text: String) throws {
        try write(name + ".tmp", text)
        try rename(name + ".tmp", to: name)
    }

    func rename(_ name: String, to newName: String) throws {
        guard Foundation.rename(file(name), file(newName)) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    func delete(_ name: String) throws {
        try FileManager.default.removeItem(atPath: file(name))
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A rules document with one rule per name, each with the given value type and condition.
func rulesDocument(_ names: [String], valueType: String = "coaty-edge.Temperature[Celsius]", condition: String = "true")
    -> String
{
    let rules = names.map { #"{"name": "\#($0)", "valueType": "\#(valueType)", "condition": \#(condition)}"# }
    return #"{"rules": [\#(rules.joined(separator: ", "))]}"#
}

func rule(
    _ name: String, _ valueType: RoutingRule.ValueType, _ condition: String, file: String = "test.json", index: Int = 0
) throws -> RoutingRule {
    let path = JSONPath().appending("rules").appending(index)
    return RoutingRule(
        name: name, valueType: valueType,
        condition: try JsonLogicExpression(JSONValue(parsing: condition), at: path.appending("condition")),
        origin: RuleOrigin(file: file, path: path))
}
