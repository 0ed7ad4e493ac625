import CoatyJSON
import CoatyModel
import Testing

@testable import CoatyEdgeCLI
@testable import CoatyIORouting

/// The request and the answer of `rules show` without a broker: the Call's parameters, the pages that stay below
/// their byte limit whatever the names, and the answers of routers of older versions, which list every association.
@Suite struct RouterReportTests {
    static func association(_ index: Int, name: String? = nil, rule: String = "all") -> IoAssociation {
        IoAssociation(
            sourceId: "source-\(index)", sourceName: name ?? "source \(index)", actorId: "actor-\(index % 7)",
            actorName: "actor \(index % 7)", valueType: "t.\(index % 3)", sourceAgentId: "agent-\(index)",
            actorAgentId: "display",
            route: "coaty/3/-/IOV/source-\(index)", updateRate: nil, rule: rule)
    }

    static let context: JSONValue = .object(["name": .string("Hall"), "objectId": .string("context-1")])

    @Test func parametersTravelAndBadOnesAreRefusedWithTheirPath() throws {
        #expect(IoAssociationQuery().parameters == nil)
        #expect(try IoAssociationQuery(parameters: nil) == IoAssociationQuery())
        var query = IoAssociationQuery()
        query.routerId = "router-1"
        query.context = "Hall"
        query.rule = NamePattern("even-*")
        query.source = NamePattern("source 7.*")
        query.actor = NamePattern("actor-3")
        query.agentIds = ["agent-1", "agent-2"]
        query.offset = 200
        query.limit = 100
        query.includesSummary = true
        #expect(try IoAssociationQuery(parameters: query.parameters) == query)

        for (parameters, path) in [
            (#"{"limit": -1}"#, "$.limit"), (#"{"offset": 1.5}"#, "$.offset"), (#"{"agents": "agent-1"}"#, "$.agents"),
            (#"{"rule": ""}"#, "$.rule"), (#"{"pages": 3}"#, "$.pages"), (#"[1]"#, "$"),
        ] {
            let error = #expect(throws: JSONShapeError.self) {
                try IoAssociationQuery(parameters: JSONValue(parsing: Array(parameters.utf8)))
            }
            #expect(error?.path.description == path, "\(parameters): \(String(describing: error))")
        }
    }

    @Test func pagesStayBelowTheLimitAndTogetherAreTheWhole() throws {
        // Names of 1,000 characters: 40 associations are more than 64 KiB.
        let associations = (0..<400).map { Self.association($0, name: String(repeating: "x", count: 1000) + "\($0)") }
        var query = IoAssociationQuery()
        var listed: [String] = []
        var pages = 0
        while true {
            let answer = IoAssociationReport.answer(
                query, associations: associations, context: Self.context, router: "R", revision: 4)
            #expect(answer.serializedBytes().count <= IoAssociationReport.maximumAnswerBytes)
            let page = answer["associations"]?.arrayValue ?? []
            #expect(!page.isEmpty)
            listed += page.compactMap { $0["sourceId"]?.stringValue }
            pages += 1
            guard let next = answer["nextOffset"]?.intValue else { break }
            #expect(next == query.offset + page.count)
            query.offset = next
        }
        #expect(listed == associations.map(\.sourceId))
        #expect(pages >= 7)

        // A single association larger than the limit still makes a page, so that paging gets on.
        let huge = [Self.association(0, name: String(repeating: "y", count: 100_000)), Self.association(1)]
        let first = IoAssociationReport.answer(
            IoAssociationQuery(), associations: huge, context: Self.context, router: "R", revision: 1)
        #expect(first["associations"]?.arrayValue?.count == 1)
        #expect(first["nextOffset"]?.intValue == 1)
    }

    @Test func filtersAndSummaryCountWhatMatches() throws {
        let associations = (0..<30).map { Self.association($0, rule: $0 % 2 == 0 ? "even" : "odd") }
        var query = IoAssociationQuery()
        query.rule = NamePattern("ev*")
        query.actor = NamePattern("actor 3")
        query.includesSummary = true
        let answer = IoAssociationReport.answer(
            query, associations: associations, context: Self.context, router: "R", revision: 2)
        // Even sources with actor 3: 10, 24.
        #expect(
            answer["associations"]?.arrayValue?.compactMap { $0["sourceId"]?.stringValue } == [
                "source-10", "source-24",
            ])
        #expect(answer["total"]?.intValue == 30)
        #expect(answer["matched"]?.intValue == 2)
        #expect(
            answer["summary"]?["rules"] == .array([.object(["rule": .string("even"), "associations": .number(2)])]))
        #expect(answer["summary"]?["agents"]?.intValue == 3)
        query = IoAssociationQuery()
        query.agentIds = ["agent-5"]
        #expect(
            IoAssociationReport.answer(
                query, associations: associations, context: Self.context, router: "R", revision: 2)["matched"]?.intValue
                == 1)
    }

    /// A router of an older version lists all its associations (without value types and agents), whatever is asked:
    /// the CLI filters and pages them as a router of this version would, and prints a few as they always were.
    @Test func anOlderRoutersAnswerIsFilteredAndPagedHere() throws {
        let entries: [JSONValue] = (0..<150).map { index in
            .object([
                "sourceId": .string("source-\(index)"), "sourceName": .string("source \(index)"),
                "actorId": .string("actor-1"),
                "actorName": .string("display"), "route": .string("coaty/3/-/IOV/source-\(index)"),
                "rule": .string("all"),
            ])
        }
        let old = RouterReport.Answer(
            routerAgentId: "router-1",
            result: .object(["context": Self.context, "router": .string("Old router"), "associations": .array(entries)])
        )
        var query = IoAssociationQuery()
        query.limit = 100
        query.includesSummary = true
        let summarised = try #require(RouterReport.normalized(old, query: query))
        #expect(summarised.result["matched"]?.intValue == 150)
        #expect(summarised.nextOffset == 100)
        #expect(summarised.result["revision"] == nil)
        let text = RouterReport.text([summarised])
        #expect(
            text.hasPrefix(
                "router Old router (router-1): context Hall, version 0\n  150 associations: 150 sources, 1 actor\n"),
            "\(text)")
        #expect(text.contains("\n  100 a page: --page 1 to 2, or --all;"))

        query.source = NamePattern("source 1?")
        let filtered = try #require(RouterReport.normalized(old, query: query))
        #expect(
            RouterReport.text([filtered]).components(separatedBy: "\n").dropFirst().first
                == "  10 associations of 150 match")
        query.context = "Kitchen"
        #expect(RouterReport.normalized(old, query: query) == nil)

        let few = RouterReport.Answer(
            routerAgentId: "router-1",
            result: .object([
                "context": Self.context, "router": .string("Old router"),
                "associations": .array(Array(entries.prefix(2))),
            ]))
        let listed = try #require(RouterReport.normalized(few, query: IoAssociationQuery()))
        #expect(
            RouterReport.text([listed]) == """
                router Old router (router-1): context Hall, version 0
                  source 0 → display  rule all
                  source 1 → display  rule all

                """)
    }
}
