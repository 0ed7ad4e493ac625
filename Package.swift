// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "coaty-edge",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CoatyJSON", targets: ["CoatyJSON"])
    ],
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

        // Hardware: buses, drivers, sensors and GPIO lines.
        .target(name: "EdgeHardware", dependencies: ["CoatyJSON"]),

        // Communication.
        .target(name: "CoatyMQTT"),
        .target(
            name: "CoatyCommunication",
            dependencies: ["CoatyModel", "CoatyMQTT", .product(name: "Logging", package: "swift-log")]),

        // Runtime: container, controllers, configuration.
        .target(
            name: "CoatyRuntime",
            dependencies: [
                "CoatyCommunication", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // IO routing: source and actor controllers, backpressure, routers and rules.
        .target(name: "CoatyIORouting", dependencies: ["CoatyRuntime"]),

        // Test support.
        .target(name: "CoatyTestSupport", dependencies: ["CoatyModel", "CoatyMQTT"], path: "Tests/CoatyTestSupport"),

        .testTarget(name: "CoatyJSONTests", dependencies: ["CoatyJSON"]),
        .testTarget(name: "CoatyModelTests", dependencies: ["CoatyModel"]),
        .testTarget(name: "CoatyCommunicationTests", dependencies: ["CoatyCommunication", "CoatyTestSupport"]),
        .testTarget(name: "CoatyRuntimeTests", dependencies: ["CoatyRuntime", "CoatyTestSupport"]),
        .testTarget(name: "CoatyIORoutingTests", dependencies: ["CoatyIORouting", "CoatyTestSupport"]),
        .testTarget(name: "EdgeHardwareTests", dependencies: ["EdgeHardware", "CoatyJSON"]),
        // deploy/: the systemd unit, udev rules, broker configuration and install.sh, run for real.
        .testTarget(name: "DeployTests", dependencies: ["CoatyRuntime"]),
    ]
)
