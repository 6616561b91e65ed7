// A module declaration: its words (module, requires, exports, ...) are names everywhere else.
@Deprecated(since = "9")
open module org.example.shapes {
    requires java.base;
    requires transitive java.logging;
    requires static java.compiler;
    exports org.example.shapes.api;
    exports org.example.shapes.impl to org.example.app, org.example.test;
    opens org.example.shapes.model to java.base;
    uses org.example.shapes.spi.ShapeFactory;
    provides org.example.shapes.spi.ShapeFactory with org.example.shapes.impl.Circles, org.example.shapes.impl.Squares;
}
