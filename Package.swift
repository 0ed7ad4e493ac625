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

        // Hardware: buses, drivers, sensors and GPIO lines.
        .target(name: "EdgeHardware", dependencies: ["CoatyJSON", "CI2C", "CGPIOD"]),
        // Register-level emulations of the supported chips and GPIO chips behind a umockdev testbed, so that
        // the real driver code runs without hardware (tests, demo).
        .target(name: "CEdgeEmulation", dependencies: ["CUMockDev"], linkerSettings: [.linkedLibrary("m")]),
        .target(name: "EdgeEmulation", dependencies: ["CEdgeEmulation"]),
        // CPU cost of a sensor read apart from the bus: `swift run -c release HardwareBenchmark`.
        .executableTarget(name: "HardwareBenchmark", dependencies: ["EdgeHardware", "EdgeEmulation"]),

        // Communication.
        .target(name: "CoatyMQTT"),

        .testTarget(name: "CoatyJSONTests", dependencies: ["CoatyJSON"]),
        .testTarget(name: "EdgeHardwareBusTests", dependencies: ["EdgeHardware", "EdgeEmulation"]),
    ]
)
