// swift-tools-version: 6.1
import PackageDescription

// Layers, each depending only on the ones above it:
//   C shims                 CMosquitto, CI2C, CGPIOD, CUMockDev
//   JSON, model and codec   CoatyJSON, CoatyModel (pure Swift, no I/O)
//   communication           CoatyMQTT (libmosquitto), CoatyCommunication (manager, presence)
//   runtime                 CoatyRuntime (container, controllers, configuration)
//   rules                   JsonLogic, RoutingRules
//   IO routing              CoatyIORouting (source/actor controllers, backpressure, routers)
//   hardware                EdgeHardware (buses, drivers, sensors, GPIO), EdgeEmulation (emulated chips)
let package = Package(
    name: "coaty-edge",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // C libraries; nothing else touches C.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto"),
        .systemLibrary(name: "CI2C"),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod"),
        // Emulated devices for tests and the demo (umockdev).
        .systemLibrary(name: "CUMockDev", pkgConfig: "umockdev-1.0"),

        // Pure Swift, no I/O.
        .target(name: "CoatyJSON"),
        // Coaty objects, events, topics and filters.
        .target(name: "CoatyModel", dependencies: ["CoatyJSON"]),

        // Communication.
        .target(name: "CoatyMQTT", dependencies: ["CMosquitto"]),
        .target(
            name: "CoatyCommunication",
            dependencies: ["CoatyModel", "CoatyMQTT", .product(name: "Logging", package: "swift-log")]),

        // Runtime: container, controllers, configuration.
        .target(
            name: "CoatyRuntime",
            dependencies: [
                "CoatyCommunication", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // Routing rules as JSON files: a JsonLogic engine, the rule file format, loading and hot reload.
        .target(name: "JsonLogic", dependencies: ["CoatyJSON"]),
        .target(name: "RoutingRules", dependencies: ["CoatyJSON", "JsonLogic"]),

        // IO routing: source and actor controllers, backpressure, routers and rules.
        .target(name: "CoatyIORouting", dependencies: ["CoatyRuntime"]),

        // Hardware: buses, drivers, sensors and GPIO lines.
        .target(name: "EdgeHardware", dependencies: ["CoatyJSON", "CI2C", "CGPIOD"]),
        // Register-level emulations of the supported chips and GPIO chips behind a umockdev testbed, so that
        // the real driver code runs without hardware (tests, demo).
        .target(name: "CEdgeEmulation", dependencies: ["CUMockDev"], linkerSettings: [.linkedLibrary("m")]),
        .target(name: "EdgeEmulation", dependencies: ["CEdgeEmulation"]),
        // CPU cost of a sensor read apart from the bus: `swift run -c release HardwareBenchmark`.
        .executableTarget(name: "HardwareBenchmark", dependencies: ["EdgeHardware", "EdgeEmulation"]),
        // The agent against a bare libmosquitto client on one broker: `swift run -c release coaty-edge-bench`.
        .executableTarget(
            name: "coaty-edge-bench",
            dependencies: ["CMosquitto", "CoatyIORouting", .product(name: "Logging", package: "swift-log")]),

        // Test support: an in-memory broker for logic tests, a real mosquitto per test, recorders and clocks.
        .target(name: "CoatyTestSupport", dependencies: ["CoatyCommunication"], path: "Tests/CoatyTestSupport"),
        .target(name: "MQTTTestSupport", dependencies: ["CoatyMQTT"], path: "Tests/MQTTTestSupport"),

        .testTarget(name: "CoatyJSONTests", dependencies: ["CoatyJSON"]),
        .testTarget(name: "CoatyModelTests", dependencies: ["CoatyModel"]),
        .testTarget(name: "CoatyMQTTTests", dependencies: ["CoatyMQTT", "MQTTTestSupport"]),
        .testTarget(name: "CoatyCommunicationTests", dependencies: ["CoatyCommunication", "CoatyTestSupport"]),
        .testTarget(name: "CoatyRuntimeTests", dependencies: ["CoatyRuntime", "CoatyTestSupport"]),
        .testTarget(name: "JsonLogicTests", dependencies: ["JsonLogic", "CoatyJSON"]),
        .testTarget(name: "RoutingRulesTests", dependencies: ["RoutingRules", "JsonLogic", "CoatyJSON"]),
        .testTarget(name: "CoatyIORoutingTests", dependencies: ["CoatyIORouting", "CoatyTestSupport"]),
        .testTarget(name: "EdgeHardwareTests", dependencies: ["EdgeHardware", "CoatyJSON"]),
        .testTarget(name: "EdgeHardwareBusTests", dependencies: ["EdgeHardware", "EdgeEmulation"]),
        // deploy/: the systemd unit, udev rules, broker configuration and install.sh, run for real.
        .testTarget(name: "DeployTests", dependencies: ["CoatyRuntime"]),
        // The protocol and IO routing scenarios between agents, over the in-memory broker and a real mosquitto.
        .testTarget(
            name: "IntegrationTests", dependencies: ["CoatyIORouting", "CoatyTestSupport", "MQTTTestSupport"]),
    ]
)

// The libFuzzer target for the inbound path; see Fuzz/run. It has no main, so it exists only when asked for.
if Context.environment["COATY_EDGE_FUZZ"] == "1" {
    package.targets.append(
        .executableTarget(
            name: "coaty-edge-fuzz", dependencies: ["CoatyTestSupport"], path: "Fuzz", exclude: ["corpus", "run"],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
}
