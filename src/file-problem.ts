/**
 * A file error in words an operator acts on: the backup commands and the model download say
 * why a file could not be written. (EEXIST only comes from a backup, which never overwrites.)
 */
export function fileProblem(error: { code?: string; message?: string }): string {
  switch (error.code) {
    case 'EEXIST':
      return 'it exists already (a backup never overwrites a file)';
    case 'ENOENT':
      return 'its directory does not exist';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    case 'ENOSPC':
      return 'the disk is full';
    case 'EDQUOT':
      return 'the disk quota is used up';
    case 'EFBIG':
      return 'the file would be larger than this system allows (ulimit -f)';
    default:
      return error.code ?? error.message ?? 'unknown error';
  }
}
