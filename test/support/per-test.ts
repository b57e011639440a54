// What a test opens — its app, its model stub, a receiver — closed after each test, the last opened
// first (the app before the stub its worker may still be asking), whether the test passed or not.
import { afterEach } from "vitest";

type Closeable = { close(): Promise<unknown> };

/**
 * Registers, in the calling file, the afterEach that closes what its tests passed to the function
 * returned: `t = closing(await startTestApp(…))` gives back what it is given.
 */
export function closedAfterEach(): <T extends Closeable>(opened: T) => T {
  const open: Closeable[] = [];
  afterEach(async () => {
    for (const opened of open.splice(0).reverse()) await opened.close();
  });
  return (opened) => {
    open.push(opened);
    return opened;
  };
}
