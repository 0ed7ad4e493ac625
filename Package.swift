// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "coaty-edge",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CoatyJSON", targets: ["CoatyJSON"])
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

        // Routing rules as JSON files: a JsonLogic engine, the rule file format, loading and hot reload.
        .target(name: "JsonLogic", dependencies: ["CoatyJSON"]),
        .target(name: "RoutingRules", dependencies: ["CoatyJSON", "JsonLogic"]),

        // Hardware: buses, drivers, sensors and GPIO lines.
        .target(name: "EdgeHardware", dependencies: ["CoatyJSON"]),

        // Communication.
        .target(name: "CoatyMQTT"),

        .testTarget(name: "CoatyJSONTests", dependencies: ["CoatyJSON"]),
        .testTarget(name: "JsonLogicTests", dependencies: ["JsonLogic", "CoatyJSON"]),
        .testTarget(name: "RoutingRulesTests", dependencies: ["RoutingRules", "JsonLogic", "CoatyJSON"]),
    ]
)
