@echo off
rem kubectl_complete-cmsync: makes `kubectl cmsync <TAB>` complete (kubectl 1.26 or later) on Windows.
rem kubectl runs this from PATH with the words typed after `kubectl cmsync`; it hands them to
rem `kubectl-cmsync __complete`, taking kubectl-cmsync.exe beside this file first, else from PATH.
if exist "%~dp0kubectl-cmsync.exe" (
  "%~dp0kubectl-cmsync.exe" __complete %*
) else (
  kubectl-cmsync.exe __complete %*
)
