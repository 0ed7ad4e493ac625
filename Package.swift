// swift-tools-version: 6.1
import PackageDescription

// Layers, each depending only on the ones above it:
//   C shims                 CMosquitto, CMosquittoSocket, CI2C, CGPIOD, CAvahi, CBuildInfo, CProgramPages, CFileSystemType
//   base                    ElapsedTime (an instant as the time since an origin), DetachedThread (blocking calls, the
//                           timespec of their waits)
//   JSON, model and codec   CoatyJSON, CoatyModel (pure Swift, no I/O); CoatyFiles (bounded reads of operators' files)
//   communication           CoatyMQTT (libmosquitto), CoatyBrokerDiscovery (mDNS), CoatyCommunication (manager, presence)
//   shared objects          CoatySharedObjects (versioned key/value objects and messages between agents)
//   runtime                 CoatyRuntime (container, controllers, configuration)
//   rules                   JsonLogic, RoutingRules
//   IO routing              CoatyIORouting (source/actor controllers, backpressure, routers)
//   hardware                EdgeHardware (buses, drivers, sensors, GPIO), EdgeEmulation (emulated chips)
//   MQTT topics, HA         CoatyHomeAssistant (plain MQTT topics and Home Assistant discovery)
//   agent                   CoatyEdgeAgent (an agent from its configuration file)
//   command line            CoatyEdgeCLI (what the subcommands do), CoatyEdgeOptions (the client options), coaty-edge
//                           (the executable)
//   dashboard               CoatyDashboard (the web dashboard's server), coaty-edge-dashboard (its executable, apart
//                           from coaty-edge so that the agent does not map the HTTP server library)
//   testing                 CoatyTesting (the helpers users test their controllers with: in-memory broker, real
//                           mosquitto, manual clock, recorders), under the suites' CoatyTestSupport and MQTTTestSupport
let package = Package(
    name: "coaty-edge",
    platforms: [.macOS(.v15)],
    // The library: what another package can depend on (README, "Using coaty-edge as a library"). Each product lists
    // the modules its users import; the others (CoatyBrokerDiscovery, CoatyFiles, the C shims) come along as
    // dependencies with `package` access only.
    products: [
        .library(
            name: "CoatyCore", targets: ["CoatyJSON", "CoatyModel", "CoatyMQTT", "CoatyCommunication", "CoatyRuntime"]),
        .library(name: "CoatySharedObjects", targets: ["CoatySharedObjects"]),
        .library(name: "CoatyIORouting", targets: ["CoatyIORouting", "RoutingRules", "JsonLogic"]),
        .library(name: "CoatyEdgeHardware", targets: ["EdgeHardware"]),
        .library(name: "CoatyTesting", targets: ["CoatyTesting", "EdgeEmulation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // `swift package generate-documentation --target <module>` (the DocC catalogs in Sources/<module>/<module>.docc,
        // with the compiled samples of Snippets/); a command plugin, so nothing of it is linked into a product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C libraries; nothing else touches C.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto"),
        .systemLibrary(name: "CI2C"),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod"),
        // Whether the binary's Swift runtime is linked in (coaty-edge --version).
        .target(name: "CBuildInfo"),
        // Unmapping the program's read-only pages once the agent has started (start-up code is not kept resident).
        .target(name: "CProgramPages"),
        // libmosquitto's reads of the broker socket served from a buffer (a burst of packets in one read() rather than
        // three per packet), and its writes gathered into one (a batch of packets in one write() rather than one each).
        .target(name: "CMosquittoSocket", linkerSettings: [.linkedLibrary("dl")]),
        // Whether a sysfs attribute kept open is really on sysfs (fstatfs), for EdgeHardware.
        .target(name: "CFileSystemType"),

        // Pure Swift, no I/O.
        .target(name: "CoatyJSON"),
        // The instant type of the timelines that loops and controllers count from their own start over any clock.
        .target(name: "ElapsedTime"),
        // A detached thread for calls that block, which must not hold one of the concurrency pool's threads; and the
        // one conversion of a Duration to the timespec that their waits (nanosleep, pthread_cond_timedwait) take.
        .target(name: "DetachedThread"),
        // Coaty objects, events, topics and filters.
        .target(name: "CoatyModel", dependencies: ["CoatyJSON"]),
        // Reading the files an operator names (configuration, rules, passwords): regular files only, up to a limit.
        .target(name: "CoatyFiles"),

        // Communication.
        .target(name: "CoatyMQTT", dependencies: ["CMosquitto", "CMosquittoSocket", "DetachedThread"]),
        // Brokers found by mDNS/DNS-SD (_coaty-mqtt._tcp, as Coaty JS publishes them) through Avahi's client library.
        // libavahi-client is loaded with dlopen at the first browse, so that an agent with a broker URL does not map it
        // and the libraries it pulls in (D-Bus, libsystemd, gcrypt, compressors: about 1 MiB); its headers only build.
        .target(name: "CAvahi", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CoatyBrokerDiscovery", dependencies: ["CAvahi", "CoatyMQTT"]),
        .target(
            name: "CoatyCommunication",
            dependencies: [
                "CoatyBrokerDiscovery", "CoatyModel", "CoatyMQTT", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),

        // Shared objects: versioned key/value state and messages every agent can read and change.
        .target(
            name: "CoatySharedObjects",
            dependencies: ["CoatyCommunication", .product(name: "Logging", package: "swift-log")]),

        // Runtime: container, controllers, configuration.
        .target(
            name: "CoatyRuntime",
            dependencies: [
                "CoatyBrokerDiscovery", "CoatyCommunication", "CoatyFiles", "CoatySharedObjects",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // Routing rules as JSON files: a JsonLogic engine, the rule file format, loading and hot reload.
        .target(name: "JsonLogic", dependencies: ["CoatyJSON"]),
        .target(
            name: "RoutingRules",
            dependencies: ["CoatyFiles", "CoatyJSON", "CoatyModel", "DetachedThread", "JsonLogic"]),

        // IO routing: source and actor controllers, backpressure, routers and rules.
        .target(
            name: "CoatyIORouting",
            dependencies: [
                "CoatyRuntime", "CoatySharedObjects", "ElapsedTime", "RoutingRules",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),

        // Hardware: buses, drivers, sensors and GPIO lines.
        .target(
            name: "EdgeHardware",
            dependencies: ["CoatyJSON", "CI2C", "CGPIOD", "CFileSystemType", "DetachedThread", "ElapsedTime"]),
        // Register-level emulations of the supported chips and GPIO chips behind a umockdev testbed, so that
        // the real driver code runs without hardware (tests, demo).
        // libumockdev is loaded when an emulation starts (dlopen), so that an agent on real hardware does not map it.
        .target(name: "CEdgeEmulation", linkerSettings: [.linkedLibrary("m"), .linkedLibrary("dl")]),
        .target(name: "EdgeEmulation", dependencies: ["CEdgeEmulation"]),
        // CPU cost of a sensor read apart from the bus: `swift run -c release HardwareBenchmark`; the pulse counter at
        // rising pulse rates on an emulated line: `Tests/Tools/measure-counter.sh` (`HardwareBenchmark counter`).
        .executableTarget(name: "HardwareBenchmark", dependencies: ["EdgeHardware", "EdgeEmulation"]),
        // The agent against a bare libmosquitto client on one broker: `swift run -c release coaty-edge-bench`.
        .executableTarget(
            name: "coaty-edge-bench",
            dependencies: [
                "CMosquitto", "CoatyIORouting", "DetachedThread", "ProcessSpawning",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The agent's points on plain MQTT topics and in Home Assistant (MQTT discovery), on a connection of its own.
        .target(
            name: "CoatyHomeAssistant",
            dependencies: [
                "CoatyModel", "CoatyRuntime", "CoatySharedObjects", "CoatyMQTT", "EdgeHardware",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),

        // The agent as its configuration file describes it: controllers, routers with rule files, devices.
        .target(
            name: "CoatyEdgeAgent",
            dependencies: [
                "CoatyIORouting", "CoatySharedObjects", "EdgeHardware", "EdgeEmulation", "CoatyHomeAssistant",
                .product(name: "Metrics", package: "swift-metrics"),
            ]),

        // The command line: the agent's service (logging, metrics endpoint, systemd notification) and the client
        // subcommands (observe, agents, rules, context, shared) as a library, and the thin executable that parses arguments.
        .target(
            name: "CoatyEdgeCLI",
            dependencies: [
                "CBuildInfo", "CoatyBrokerDiscovery", "CoatyEdgeAgent", "CoatyFiles", "CoatySharedObjects",
                "CProgramPages", "DetachedThread",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]),
        // The options of the client subcommands (broker, credentials, TLS, --config), shared by coaty-edge and
        // coaty-edge-dashboard.
        .target(
            name: "CoatyEdgeOptions",
            dependencies: [
                "CoatyEdgeCLI", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The commit `coaty-edge --version` reports, from git at build time (Plugins/BuildCommit says why not from
        // this manifest); written into the thin executable, so that a new commit recompiles it alone.
        .plugin(name: "BuildCommit", capability: .buildTool()),
        .executableTarget(
            name: "coaty-edge",
            dependencies: [
                "CoatyEdgeCLI", "CoatyEdgeOptions", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            plugins: ["BuildCommit"]),

        // Testing helpers for users' own controllers (the CoatyTesting product): an in-memory broker, a real mosquitto
        // on 127.0.0.1 on a free port, a manual clock, recorders; with EdgeEmulation's emulated chips.
        .target(
            name: "CoatyTesting",
            dependencies: [
                "CoatyModel", "CoatyMQTT", "ProcessSpawning", .product(name: "Logging", package: "swift-log"),
            ]),
        // Starting a child (mosquitto) with no signal blocked, without Foundation: for CoatyTesting's brokers and the
        // bench's, whose process keeps Foundation out.
        .target(name: "ProcessSpawning", dependencies: ["CSpawnActions"]),
        .target(name: "CSpawnActions"),
        // Our own test support on top of it: scenarios, fuzz harnesses, child processes, bridged brokers.
        .target(
            name: "CoatyTestSupport",
            dependencies: [
                "CoatyTesting", "CoatyCommunication", "CoatySharedObjects", "CoatyIORouting", "EdgeHardware",
                "EdgeEmulation",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/CoatyTestSupport"),
        .target(name: "MQTTTestSupport", dependencies: ["CoatyMQTT", "CoatyTesting"], path: "Tests/MQTTTestSupport"),

        .testTarget(name: "CoatyJSONTests", dependencies: ["CoatyJSON"]),
        .testTarget(name: "CoatyModelTests", dependencies: ["CoatyModel"]),
        .testTarget(name: "DetachedThreadTests", dependencies: ["DetachedThread"]),
        .testTarget(
            name: "CoatyMQTTTests",
            dependencies: ["CoatyMQTT", "CMosquittoSocket", "DetachedThread", "MQTTTestSupport"]),
        .testTarget(name: "CoatyBrokerDiscoveryTests", dependencies: ["CoatyBrokerDiscovery"]),
        .testTarget(
            name: "CoatyCommunicationTests",
            dependencies: [
                "CoatyCommunication", "CoatyTestSupport", "DetachedThread",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .testTarget(
            name: "CoatyRuntimeTests", dependencies: ["CoatyRuntime", "CoatySharedObjects", "CoatyTestSupport"]),
        .testTarget(
            name: "CoatySharedObjectsTests",
            dependencies: ["CoatySharedObjects", "CoatyIORouting", "CoatyTestSupport", "MQTTTestSupport"]),
        .testTarget(name: "JsonLogicTests", dependencies: ["JsonLogic", "CoatyJSON"]),
        .testTarget(
            name: "RoutingRulesTests",
            dependencies: ["RoutingRules", "JsonLogic", "CoatyJSON", "CoatyModel", "CoatyTestSupport"]),
        .testTarget(
            name: "CoatyIORoutingTests",
            dependencies: ["CoatyIORouting", "CoatyTestSupport", "JsonLogic", "RoutingRules"]),
        .testTarget(
            name: "CoatyHomeAssistantTests",
            dependencies: ["CoatyHomeAssistant", "CoatyRuntime", "EdgeHardware", "CoatyJSON"]),
        .testTarget(
            name: "EdgeHardwareTests", dependencies: ["EdgeHardware", "CoatyJSON", "CoatyTesting", "DetachedThread"]),
        .testTarget(name: "EdgeHardwareBusTests", dependencies: ["EdgeHardware", "EdgeEmulation", "CoatyTestSupport"]),
        .testTarget(
            name: "CoatyEdgeAgentTests",
            dependencies: ["CoatyEdgeAgent", "EdgeEmulation", "CoatyTestSupport", "MQTTTestSupport"]),
        // deploy/: the systemd unit, udev rules, broker configuration and install.sh, run for real.
        .testTarget(name: "DeployTests", dependencies: ["CoatyRuntime", "CoatyTestSupport"]),
        // The CLI's parts on their own, and the built `coaty-edge` executable run as a child process against a real
        // broker (the dependency on the executable makes `swift build --build-tests` build it; `coaty-edge-bench fleet`
        // simulates a fleet for it).
        .testTarget(
            name: "CoatyEdgeCLITests",
            dependencies: ["CoatyEdgeCLI", "coaty-edge", "coaty-edge-bench", "CoatyTestSupport", "MQTTTestSupport"]),
        // The protocol and IO routing scenarios between agents, over the in-memory broker and a real mosquitto.
        .testTarget(
            name: "IntegrationTests", dependencies: ["CoatyIORouting", "CoatyTestSupport", "MQTTTestSupport"]),
    ]
)

// The web dashboard (`coaty-edge dashboard` executes `coaty-edge-dashboard`): Hummingbird 2 needs Swift 6.2, so with an
// older compiler the agent and the other commands build without it.
#if compiler(>=6.2)
    package.dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ]
    package.targets += [
        .target(
            name: "CoatyDashboard",
            dependencies: [
                "CoatyEdgeCLI", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            resources: [
                .embedInCode("Page/dashboard.html"), .embedInCode("Page/dashboard.js"),
                .embedInCode("Page/dashboard.css"),
            ]),
        .executableTarget(
            name: "coaty-edge-dashboard",
            dependencies: [
                "CoatyDashboard", "CoatyEdgeOptions",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The dashboard's parts on their own, and its server against a real broker and agents (the page itself is
        // tested in chromium by Tests/Browser, which .ci/run runs).
        .testTarget(
            name: "CoatyDashboardTests",
            dependencies: [
                "CoatyDashboard", "coaty-edge-dashboard", "coaty-edge", "CoatyTestSupport", "MQTTTestSupport",
            ]),
    ]
#endif

// The libFuzzer target for the inbound path, the rules and router evaluation and the actor/output path; see
// Tests/Fuzz/run. It has no main, so it exists only when asked for.
if Context.environment["COATY_EDGE_FUZZ"] == "1" {
    package.targets.append(
        .executableTarget(
            name: "coaty-edge-fuzz", dependencies: ["CoatyTestSupport"], path: "Tests/Fuzz",
            exclude: ["corpus", "run", "fuzz.dict"],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
}
