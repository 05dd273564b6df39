package org.qnt;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads libqnt ({@code libqnt.so.1}) and the JNI library ({@code libqnt_java.so}) before the
 * first native call, as ONNX Runtime's Java API does. It looks, in order:
 * <ol>
 *   <li>in the directory named by the system property {@code qnt.native.dir};
 *   <li>next to the JAR (or class directory) this class was loaded from;
 *   <li>inside the JAR, under {@code org/qnt/native/<os>-<arch>/}, extracted to a temporary
 *       directory that is removed when the JVM exits;
 *   <li>on {@code java.library.path} ({@code System.loadLibrary("qnt_java")}), with libqnt found
 *       by the system's loader.
 * </ol>
 */
final class NativeLoader {
  static final String LIBRARY = "libqnt.so.1";
  static final String JNI_LIBRARY = "libqnt_java.so";
  private static boolean loaded;

  private NativeLoader() {}

  /** The platform directory of the natives inside the JAR, such as {@code linux-x86_64}. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x86_64")) arch = "x86_64";
    if (arch.equals("arm64")) arch = "aarch64";
    return (os.startsWith("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch;
  }

  static synchronized void load() {
    if (loaded) return;
    String dir = System.getProperty("qnt.native.dir");
    if (dir != null && loadFrom(new File(dir))) {
      loaded = true;
      return;
    }
    File here = codeLocation();
    if (here != null && loadFrom(here.isDirectory() ? here : here.getParentFile())) {
      loaded = true;
      return;
    }
    if (loadFromJar()) {
      loaded = true;
      return;
    }
    System.loadLibrary("qnt_java");
    loaded = true;
  }

  private static boolean loadFrom(File dir) {
    if (dir == null) return false;
    File jni = new File(dir, JNI_LIBRARY);
    if (!jni.isFile()) return false;
    File lib = new File(dir, LIBRARY);
    if (lib.isFile()) System.load(lib.getAbsolutePath());
    System.load(jni.getAbsolutePath());
    return true;
  }

  private static File codeLocation() {
    try {
      return new File(NativeLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException | SecurityException | NullPointerException e) {
      return null;
    }
  }

  private static boolean loadFromJar() {
    String base = "/org/qnt/native/" + platform() + "/";
    if (NativeLoader.class.getResource(base + JNI_LIBRARY) == null) return false;
    try {
      Path tmp = Files.createTempDirectory("qnt-native");
      tmp.toFile().deleteOnExit();
      for (String name : new String[] {LIBRARY, JNI_LIBRARY}) {
        try (InputStream in = NativeLoader.class.getResourceAsStream(base + name)) {
          if (in == null) continue;
          Path out = tmp.resolve(name);
          Files.copy(in, out, StandardCopyOption.REPLACE_EXISTING);
          out.toFile().deleteOnExit();
        }
      }
      return loadFrom(tmp.toFile());
    } catch (IOException e) {
      throw new UnsatisfiedLinkError("qnt: cannot extract the native libraries: " + e);
    }
  }
}
