// Loaded into a Dossier process with `--import`: on SIGUSR2, a promise rejects with no handler, as
// a stray rejection in one request's code would.
process.on("SIGUSR2", () => {
  void Promise.reject(new Error("a stray rejection nobody handles"));
});
