import CoatyJSON
import CoatyTestSupport
import Foundation
import JsonLogic
import RoutingRules

/// What the watcher tests do to the rule files of a `ScratchDirectory`, by name.
extension ScratchDirectory {
    /// Writes a temporary file and renames it over `name`, as editors that save atomically do.
    func saveByRename(_ name: String, _ text: String) throws {
        try write(text, to: name + ".tmp")
        try rename(name + ".tmp", to: name)
    }

    func rename(_ name: String, to newName: String) throws {
        guard Foundation.rename(file(name).path, file(newName).path) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    func delete(_ name: String) throws {
        try FileManager.default.removeItem(at: file(name))
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
