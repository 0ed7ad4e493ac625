// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "coaty-edge",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CoatyJSON", targets: ["CoatyJSON"])
    ],
    targets: [
        // Pure Swift, no I/O.
        .target(name: "CoatyJSON"),

        // Communication.
        .target(name: "CoatyMQTT"),

        .testTarget(name: "CoatyJSONTests", dependencies: ["CoatyJSON"]),
    ]
)
