// javac's parser alone, one JVM for many files: `java eval/JavaSyntaxCheck.java RELEASE FILE...`
// prints one line a file, "OK<TAB>path" or "ERR<TAB>path<TAB>line:column message" (the first
// error). JavacTask.parse() runs the scanner and parser only: no symbol or type is resolved, so
// what is reported is what javac calls a syntax error. Used by eval/java_real_code.py.
import com.sun.source.util.JavacTask;
import java.io.File;
import java.util.List;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

public class JavaSyntaxCheck {
    public static void main(String[] args) throws Exception {
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StandardJavaFileManager files = compiler.getStandardFileManager(null, null, null);
        List<String> options = List.of("--release", args[0], "-proc:none", "-encoding", "UTF-8");
        for (int i = 1; i < args.length; i++) {
            DiagnosticCollector<JavaFileObject> diags = new DiagnosticCollector<>();
            Iterable<? extends JavaFileObject> units = files.getJavaFileObjects(new File(args[i]));
            JavacTask task = (JavacTask) compiler.getTask(null, files, diags, options, null, units);
            task.parse();
            Diagnostic<? extends JavaFileObject> first = null;
            for (Diagnostic<? extends JavaFileObject> d : diags.getDiagnostics()) {
                if (d.getKind() == Diagnostic.Kind.ERROR) { first = d; break; }
            }
            if (first == null) {
                System.out.println("OK\t" + args[i]);
            } else {
                String msg = first.getMessage(null).replace('\n', ' ').replace('\t', ' ');
                System.out.println("ERR\t" + args[i] + "\t" + first.getLineNumber() + ":" + first.getColumnNumber() + " " + msg);
            }
        }
    }
}
