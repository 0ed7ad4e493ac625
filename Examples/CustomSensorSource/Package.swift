// swift-tools-version: 6.1
import PackageDescription

// A small agent on coaty-edge's library products: an IO source fed by the user's own sensor code (a soil moisture
// probe read from a file its driver writes), routed to actors by coaty-edge's IO routing.
let package = Package(
    name: "CustomSensorSource",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "coaty-edge", path: "../..")],
    targets: [
        .target(
            name: "SoilMoisture",
            dependencies: [
                .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatyIORouting", package: "coaty-edge"),
            ]),
        .executableTarget(
            name: "soil-moisture-agent",
            dependencies: [
                "SoilMoisture", .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatyIORouting", package: "coaty-edge"),
            ]),
        .testTarget(
            name: "SoilMoistureTests",
            dependencies: [
                "SoilMoisture", .product(name: "CoatyCore", package: "coaty-edge"),
                .product(name: "CoatyIORouting", package: "coaty-edge"),
                .product(name: "CoatyTesting", package: "coaty-edge"),
            ]),
    ]
)
